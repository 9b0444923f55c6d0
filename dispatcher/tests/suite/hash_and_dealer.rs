//! Flow hashing (`hashFlowID`) and shuffle sharding (`shufflesharding.go`): the vectors and the upstream tests.

use apfkit_dispatcher::flow::flow_hash;
use apfkit_dispatcher::shuffle::{Dealer, required_entropy_bits};

#[test]
fn hash_vectors() {
    let cases: [(&str, &str, u64); 9] = [
        ("global-default", "alice", 17644606172554983095),
        ("global-default", "bob", 7836649528101815225),
        ("catch-all", "", 7733929212674924205),
        ("catch-all", "system:anonymous", 10492374483539041965),
        (
            "service-accounts",
            "system:serviceaccount:default:builder",
            6620097910960460477,
        ),
        (
            "kube-controller-manager",
            "kube-system",
            1951360281921618776,
        ),
        ("system-nodes", "system:node:node-1", 11909065898299811039),
        (
            "supercalifragilistic expialidocious",
            "the sound of it is something quite atrocious",
            5000077655074073754,
        ),
        ("", "", 10987292151339758702),
    ];
    for (schema, distinguisher, expected) in cases {
        assert_eq!(
            flow_hash(schema, distinguisher),
            expected,
            "{schema:?} {distinguisher:?}"
        );
    }
}

#[test]
fn required_entropy_bits_upstream() {
    assert_eq!(required_entropy_bits(1024, 6), 60);
    assert_eq!(required_entropy_bits(512, 8), 72);
    assert_eq!(required_entropy_bits(128, 6), 42);
    assert_eq!(required_entropy_bits(64, 6), 36);
    assert_eq!(required_entropy_bits(16, 4), 16);
    assert_eq!(required_entropy_bits(1024, 7), 70);
}

#[test]
fn new_dealer_upstream() {
    let cases: [(i32, i32, Option<&str>); 6] = [
        (-100, 8, Some("deckSize -100 or handSize 8 is not positive")),
        (100, 0, Some("deckSize 100 or handSize 0 is not positive")),
        (100, 101, Some("handSize 101 is greater than deckSize 100")),
        (
            1 << 27,
            2,
            Some("deckSize 134217728 is impractically large"),
        ),
        (
            512,
            8,
            Some("required entropy bits of deckSize 512 and handSize 8 is greater than 60"),
        ),
        (1024, 6, None),
    ];
    for (deck, hand, expected) in cases {
        assert_eq!(
            Dealer::new(deck, hand)
                .err()
                .map(|e| e.to_string())
                .as_deref(),
            expected,
            "({deck}, {hand})"
        );
    }
    assert!(Dealer::new(1024, 7).is_err());
    assert!(Dealer::new(15, 15).is_ok(), "59 bits");
}

#[test]
fn deal_vectors_3_4() {
    let cases: [(u64, i32, i32, &[usize]); 20] = [
        (0, 128, 6, &[0, 1, 2, 3, 4, 5]),
        (1, 128, 6, &[1, 0, 2, 3, 4, 5]),
        (127, 128, 6, &[127, 0, 1, 2, 3, 4]),
        (128, 128, 6, &[0, 2, 1, 3, 4, 5]),
        (u64::MAX, 128, 6, &[127, 1, 7, 56, 91, 6]),
        (0x0123456789abcdef, 128, 6, &[111, 33, 73, 64, 85, 1]),
        (12345678901234567890, 64, 6, &[18, 19, 35, 60, 26, 32]),
        (u64::MAX, 64, 6, &[63, 15, 55, 23, 31, 2]),
        (0x0123456789abcdef, 16, 4, &[15, 0, 7, 1]),
        (7, 4, 4, &[3, 1, 0, 2]),
        (23, 4, 4, &[3, 2, 1, 0]),
        (987654321, 1, 1, &[0]),
        (1001001001, 9, 3, &[4, 6, 0]),
        (2002002002, 9, 3, &[8, 2, 1]),
        (400900100100, 8, 3, &[4, 7, 5]),
        (300900200200, 8, 3, &[0, 6, 1]),
        (10010010010010, 64, 7, &[26, 34, 49, 6, 39, 27, 12]),
        (20020020020020, 64, 7, &[52, 3, 34, 14, 13, 56, 25]),
        (0xfedcba9876543210, 1024, 6, &[528, 853, 334, 322, 499, 167]),
        (0xfedcba9876543210, 10, 10, &[0, 1, 2, 8, 5, 4, 3, 7, 6, 9]),
    ];
    for (hash, deck, hand, expected) in cases {
        assert_eq!(
            Dealer::new(deck, hand).unwrap().deal_into_hand(hash),
            expected,
            "V={hash} N={deck} H={hand}"
        );
    }
}

/// The KEP's wording: card i is the r[i]-th smallest index not yet dealt.
fn kep_deal(mut value: u64, deck: u64, hand: usize) -> Vec<usize> {
    let mut remaining: Vec<usize> = (0..deck as usize).collect();
    let mut out = Vec::new();
    for i in 0..hand as u64 {
        let radix = deck - i;
        let digit = (value % radix) as usize;
        value /= radix;
        out.push(remaining.remove(digit));
    }
    out
}

#[test]
fn deal_equals_the_kep_wording_exhaustively_for_small_decks() {
    for deck in 1..=7u64 {
        for hand in 1..=deck as usize {
            let dealer = Dealer::new(deck as i32, hand as i32).unwrap();
            let ff: u64 = (0..hand as u64).map(|i| deck - i).product();
            for v in 0..ff {
                assert_eq!(
                    dealer.deal_into_hand(v),
                    kep_deal(v, deck, hand),
                    "V={v} N={deck} H={hand}"
                );
            }
        }
    }
}

#[test]
fn card_duplication_upstream() {
    let mut seed = 0x2545_f491_4f6c_dd1du64;
    for (deck, hand) in [
        (4, 4),
        (8, 8),
        (10, 10),
        (12, 12),
        (128, 8),
        (256, 7),
        (512, 6),
    ] {
        let dealer = Dealer::new(deck, hand).unwrap();
        for _ in 0..2000 {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            let cards = dealer.deal_into_hand(seed);
            assert_eq!(cards.len(), hand as usize);
            let mut sorted = cards.clone();
            sorted.sort_unstable();
            sorted.dedup();
            assert_eq!(sorted.len(), hand as usize, "{cards:?}");
            assert!(cards.iter().all(|&c| c < deck as usize));
        }
    }
}

#[test]
fn uniform_distribution_upstream() {
    fn falling_factorial(n: u64, k: u64) -> u64 {
        (0..k).map(|i| n - i).product()
    }
    for (deck, hand, hash_max) in [
        (
            64u64,
            3u64,
            1u64 << ((falling_factorial(64, 3) as f64).log2().ceil() as u64 + 4),
        ),
        (128, 3, falling_factorial(128, 3)),
        (50, 4, falling_factorial(50, 4)),
    ] {
        let dealer = Dealer::new(deck as i32, hand as i32).unwrap();
        // Each unordered hand packed into one key: sorted cards, 8 bits each (decks here are < 256).
        let mut counts: std::collections::HashMap<u64, u64> = std::collections::HashMap::new();
        let mut cards = [0usize; 4];
        for v in 0..hash_max {
            let mut n = 0;
            dealer.deal(v, |c| {
                cards[n] = c;
                n += 1;
            });
            let hand_cards = &mut cards[..n];
            hand_cards.sort_unstable();
            let key = hand_cards.iter().fold(0u64, |k, &c| (k << 8) | c as u64);
            *counts.entry(key).or_default() += 1;
        }
        let ff = falling_factorial(deck, hand);
        let hand_factorial: u64 = (1..=hand).product();
        let low = hand_factorial * (hash_max / ff);
        let high = hand_factorial * hash_max.div_ceil(ff);
        for (cards, count) in &counts {
            assert!(
                (low..=high).contains(count),
                "({deck},{hand}) {cards:?}: {count} not in [{low}, {high}]"
            );
        }
    }
}

#[test]
fn deal_into_hand_length_upstream() {
    assert_eq!(Dealer::new(6, 6).unwrap().deal_into_hand(0).len(), 6);
}
