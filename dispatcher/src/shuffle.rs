//! Shuffle sharding (upstream's `pkg/util/shufflesharding/shufflesharding.go`): dealing a hand of distinct queues from a flow's hash.

/// At most this many bits of the hash may be used.
pub const MAX_HASH_BITS: i32 = 60;

/// Largest deck the dealer accepts.
pub const MAX_DECK_SIZE: i32 = 1 << 26;

/// Why a deck and hand size cannot be dealt from; messages as kube-apiserver's.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DealerError {
    /// A size is zero or negative.
    #[error("deckSize {deck} or handSize {hand} is not positive")]
    NotPositive {
        /// Deck size.
        deck: i32,
        /// Hand size.
        hand: i32,
    },
    /// More cards asked than the deck has.
    #[error("handSize {hand} is greater than deckSize {deck}")]
    HandTooLarge {
        /// Deck size.
        deck: i32,
        /// Hand size.
        hand: i32,
    },
    /// The deck is larger than [`MAX_DECK_SIZE`].
    #[error("deckSize {deck} is impractically large")]
    DeckTooLarge {
        /// Deck size.
        deck: i32,
    },
    /// The hand needs more than [`MAX_HASH_BITS`] bits of the hash.
    #[error(
        "required entropy bits of deckSize {deck} and handSize {hand} is greater than {MAX_HASH_BITS}"
    )]
    TooMuchEntropy {
        /// Deck size.
        deck: i32,
        /// Hand size.
        hand: i32,
    },
}

/// `ceil(log2(deck) × hand)`, in f64 as Go computes it.
pub fn required_entropy_bits(deck: i32, hand: i32) -> i32 {
    (f64::from(deck).log2() * f64::from(hand)).ceil() as i32
}

/// Deals hands of `hand` distinct cards from a deck of `deck` cards.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Dealer {
    deck: u64,
    hand: usize,
}

/// The largest hand the entropy limit allows (deck 15, hand 15 needs 59 bits).
const MAX_HAND: usize = 15;

impl Dealer {
    /// A dealer, if the sizes are dealable.
    pub fn new(deck: i32, hand: i32) -> Result<Self, DealerError> {
        if deck <= 0 || hand <= 0 {
            return Err(DealerError::NotPositive { deck, hand });
        }
        if hand > deck {
            return Err(DealerError::HandTooLarge { deck, hand });
        }
        if deck > MAX_DECK_SIZE {
            return Err(DealerError::DeckTooLarge { deck });
        }
        if required_entropy_bits(deck, hand) > MAX_HASH_BITS {
            return Err(DealerError::TooMuchEntropy { deck, hand });
        }
        Ok(Dealer {
            deck: deck as u64,
            hand: hand as usize,
        })
    }

    /// Number of cards in the deck.
    pub fn deck_size(&self) -> usize {
        self.deck as usize
    }

    /// Number of cards in a hand.
    pub fn hand_size(&self) -> usize {
        self.hand
    }

    /// Deals the hand of `hash`, calling `card` for each card in emission order.
    ///
    /// The hash is read as mixed-radix digits `r[i] = V mod (deck − i)`; each digit then skips
    /// past the digits before it, most recent first, which yields distinct cards.
    pub fn deal(&self, hash: u64, mut card: impl FnMut(usize)) {
        let mut digits = [0u64; MAX_HAND];
        let mut value = hash;
        for (i, digit) in digits.iter_mut().enumerate().take(self.hand) {
            let radix = self.deck - i as u64;
            *digit = value % radix;
            value /= radix;
        }
        for i in 0..self.hand {
            let mut c = digits[i];
            for j in (1..=i).rev() {
                if c >= digits[j - 1] {
                    c += 1;
                }
            }
            card(c as usize);
        }
    }

    /// The hand of `hash`, in emission order, without allocating.
    pub fn hand(&self, hash: u64) -> Hand {
        let mut hand = Hand {
            cards: [0; MAX_HAND],
            len: 0,
        };
        self.deal(hash, |card| {
            hand.cards[hand.len] = card;
            hand.len += 1;
        });
        hand
    }

    /// The hand of `hash`, in emission order.
    ///
    /// ```
    /// let dealer = apfkit_dispatcher::shuffle::Dealer::new(128, 6).unwrap();
    /// assert_eq!(dealer.deal_into_hand(1), [1, 0, 2, 3, 4, 5]);
    /// ```
    pub fn deal_into_hand(&self, hash: u64) -> Vec<usize> {
        let mut hand = Vec::with_capacity(self.hand);
        self.deal(hash, |c| hand.push(c));
        hand
    }
}

/// A dealt hand, stored inline; it dereferences to the cards in dealing order.
#[derive(Clone, Copy)]
pub struct Hand {
    cards: [usize; MAX_HAND],
    len: usize,
}

impl Hand {
    /// No cards: the hand of a level that does not queue.
    pub const EMPTY: Hand = Hand {
        cards: [0; MAX_HAND],
        len: 0,
    };
}

impl std::ops::Deref for Hand {
    type Target = [usize];

    fn deref(&self) -> &[usize] {
        &self.cards[..self.len]
    }
}

impl std::fmt::Debug for Hand {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

impl PartialEq for Hand {
    fn eq(&self, other: &Hand) -> bool {
        **self == **other
    }
}

impl Eq for Hand {}

impl PartialEq<Vec<usize>> for Hand {
    fn eq(&self, other: &Vec<usize>) -> bool {
        **self == **other
    }
}

impl<const N: usize> PartialEq<[usize; N]> for Hand {
    fn eq(&self, other: &[usize; N]) -> bool {
        **self == *other
    }
}
