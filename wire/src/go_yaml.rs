//! A JSON value as YAML, byte for byte as `go.yaml.in/yaml/v3` marshals the node it parses
//! from that JSON once the node's styles are cleared: what gnostic's `compiler.Marshal` writes
//! into every `Any.yaml` of an OpenAPI v2 document in protobuf (a default, an enum value, a
//! vendor extension), and so what kube-apiserver's `/openapi/v2` serves in protobuf.
//!
//! The emitter's own rules are kept: block mappings and sequences indented by four (a
//! collection inside a sequence item by two), empty ones as `[]` and `{}`, a string plain
//! when YAML would read it back as that string, else single-quoted, else double-quoted with
//! Go's escapes, and a string with a line feed as a literal block (`|`, `|-`, `|+`, with an
//! indentation hint when it starts with a space or a break). Numbers are written as
//! `serde_json` holds them (the JSON's text when that is how Go would write it: `1`, `-0.5`;
//! a `1e3` comes out as `1000.0`). One step of Go's is not taken: yaml.v3's parser folds a
//! raw NEL (U+0085) inside a JSON string into a space before the emitter sees it.
//!
//! ```
//! use serde_json::json;
//! let gvk = json!([{"group": "", "kind": "Pod", "version": "v1"}]);
//! assert_eq!(apfkit_wire::go_yaml::to_string(&gvk), "- group: \"\"\n  kind: Pod\n  version: v1\n");
//! assert_eq!(apfkit_wire::go_yaml::to_string(&json!("1")), "\"1\"\n");
//! ```

use apfkit_runtime::days_in_month;
use serde_json::Value;

/// The emitter's indentation step (`best_indent`).
const INDENT: usize = 4;
/// The longest key written as a simple key (`yaml_emitter_check_simple_key`).
const SIMPLE_KEY_MAX: usize = 128;

/// `value` as `go.yaml.in/yaml/v3` marshals it (see the module's documentation).
pub fn to_string(value: &Value) -> String {
    emit(|emitter| emitter.node(value, Place::Root))
}

/// A mapping of `members` in the order given (a Go struct's fields, which `serde_json`'s
/// sorted objects do not keep) as `go.yaml.in/yaml/v3` marshals it.
pub(crate) fn mapping_to_string(members: &[(&str, &Value)]) -> String {
    if members.is_empty() {
        return to_string(&Value::Object(serde_json::Map::new()));
    }
    emit(|emitter| emitter.mapping(members.iter().copied(), Place::Root))
}

/// A document written by `write`.
fn emit(write: impl FnOnce(&mut Emitter)) -> String {
    let mut emitter = Emitter {
        out: String::new(),
        column: 0,
        indent: None,
        indents: Vec::new(),
        whitespace: true,
        indention: true,
    };
    write(&mut emitter);
    // The document's end: a line break unless one was just written.
    emitter.write_indent();
    emitter.out
}

/// Where a node is written: what the emitter's state stack holds beneath it.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Place {
    Root,
    SequenceItem,
    SimpleKey,
    /// A key too long (or spanning lines) for a simple key: after `? `.
    ComplexKey,
    MappingValue,
}

impl Place {
    /// The emitter's `simple_key_context`.
    fn is_simple_key(self) -> bool {
        self == Place::SimpleKey
    }
}

/// The emitter's state, as libyaml's (`yaml_emitter_t`) for block output without comments,
/// anchors or tags.
struct Emitter {
    out: String,
    /// In characters, as the emitter counts.
    column: usize,
    /// `None` at the root (the emitter's `-1`).
    indent: Option<usize>,
    indents: Vec<Option<usize>>,
    /// The last thing written was white space (or nothing).
    whitespace: bool,
    /// Only indentation written on this line so far.
    indention: bool,
}

/// A scalar's style.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Style {
    Plain,
    SingleQuoted,
    DoubleQuoted,
    Literal,
}

impl Emitter {
    fn node(&mut self, value: &Value, place: Place) {
        match value {
            Value::Null => self.scalar("null", Style::Plain, place),
            Value::Bool(flag) => {
                self.scalar(if *flag { "true" } else { "false" }, Style::Plain, place)
            }
            Value::Number(number) => self.scalar(&number.to_string(), Style::Plain, place),
            Value::String(text) => self.string(text, place),
            Value::Array(items) if items.is_empty() => self.empty_flow("[", "]"),
            Value::Object(members) if members.is_empty() => self.empty_flow("{", "}"),
            Value::Array(items) => {
                self.increase_indent(false, place);
                for item in items {
                    self.write_indent();
                    self.write_indicator("-", true, false, true);
                    self.node(item, Place::SequenceItem);
                }
                self.indent = self.indents.pop().flatten();
            }
            Value::Object(members) => {
                self.mapping(
                    members.iter().map(|(key, value)| (key.as_str(), value)),
                    place,
                );
            }
        }
    }

    /// A block mapping of `members` in their order.
    fn mapping<'v>(&mut self, members: impl Iterator<Item = (&'v str, &'v Value)>, place: Place) {
        self.increase_indent(false, place);
        for (key, value) in members {
            self.write_indent();
            if is_simple_key(key) {
                self.string(key, Place::SimpleKey);
                self.write_indicator(":", false, false, false);
            } else {
                self.write_indicator("?", true, false, true);
                self.string(key, Place::ComplexKey);
                self.write_indent();
                self.write_indicator(":", true, false, true);
            }
            self.node(value, Place::MappingValue);
        }
        self.indent = self.indents.pop().flatten();
    }

    /// An empty sequence or mapping, in flow style.
    fn empty_flow(&mut self, open: &str, close: &str) {
        self.write_indicator(open, true, true, false);
        self.write_indicator(close, false, false, false);
    }

    /// A string scalar: quoted when YAML would resolve its plain form to another type, a
    /// literal block when it holds a line feed (encode.go's `node`).
    fn string(&mut self, text: &str, place: Place) {
        let style = if text.contains('\n') {
            Style::Literal
        } else if resolves_to_string(text) {
            Style::Plain
        } else {
            Style::DoubleQuoted
        };
        self.scalar(text, style, place);
    }

    /// `yaml_emitter_emit_scalar`: the style the emitter allows, then the text.
    fn scalar(&mut self, text: &str, wanted: Style, place: Place) {
        let analysis = Analysis::of(text);
        let style = select_style(wanted, &analysis, place.is_simple_key());
        // Continuation lines of the scalar are indented one step further.
        self.increase_indent(true, place);
        match style {
            Style::Plain => self.write_plain(text),
            Style::SingleQuoted => self.write_single_quoted(text),
            Style::DoubleQuoted => self.write_double_quoted(text),
            Style::Literal => self.write_literal(text),
        }
        self.indent = self.indents.pop().flatten();
    }

    /// `yaml_emitter_increase_indent_compact` (never with a compact sequence indent).
    fn increase_indent(&mut self, flow: bool, place: Place) {
        self.indents.push(self.indent);
        self.indent = Some(match self.indent {
            None if flow => INDENT,
            None => 0,
            // The first indent inside a sequence just skips the `- ` indicator.
            Some(indent) if place == Place::SequenceItem => indent + 2,
            Some(indent) => INDENT * ((indent + INDENT) / INDENT),
        });
    }

    fn put(&mut self, character: char) {
        self.out.push(character);
        self.column += 1;
    }

    fn put_break(&mut self) {
        self.out.push('\n');
        self.column = 0;
        self.indention = true;
    }

    /// A line break of the value itself (`write_break`).
    fn write_break(&mut self, character: char) {
        if character == '\n' {
            self.put_break();
        } else {
            self.out.push(character);
            self.column = 0;
            self.indention = true;
        }
    }

    fn write_indent(&mut self) {
        let indent = self.indent.unwrap_or(0);
        if !self.indention || self.column > indent || (self.column == indent && !self.whitespace) {
            self.put_break();
        }
        while self.column < indent {
            self.put(' ');
        }
        self.whitespace = true;
    }

    fn write_indicator(
        &mut self,
        indicator: &str,
        need_whitespace: bool,
        is_whitespace: bool,
        is_indention: bool,
    ) {
        if need_whitespace && !self.whitespace {
            self.put(' ');
        }
        for character in indicator.chars() {
            self.put(character);
        }
        self.whitespace = is_whitespace;
        self.indention = self.indention && is_indention;
    }

    /// A plain scalar (the emitter's width is unlimited, so no line is folded).
    fn write_plain(&mut self, text: &str) {
        if !text.is_empty() && !self.whitespace {
            self.put(' ');
        }
        self.write_lines(text, false);
        if !text.is_empty() {
            self.whitespace = false;
        }
        self.indention = false;
    }

    fn write_single_quoted(&mut self, text: &str) {
        self.write_indicator("'", true, false, false);
        self.write_lines(text, true);
        self.write_indicator("'", false, false, false);
        self.whitespace = false;
        self.indention = false;
    }

    /// A plain or single-quoted scalar's text: its breaks as the emitter writes them (a line
    /// feed doubled, the next line indented), its quotes doubled when `quoted`.
    fn write_lines(&mut self, text: &str, quoted: bool) {
        let mut breaks = false;
        for character in text.chars() {
            if character == ' ' {
                self.put(' ');
            } else if is_break(character) {
                if !breaks && character == '\n' {
                    self.put_break();
                }
                self.write_break(character);
                breaks = true;
            } else {
                if breaks {
                    self.write_indent();
                }
                if quoted && character == '\'' {
                    self.put('\'');
                }
                self.put(character);
                self.indention = false;
                breaks = false;
            }
        }
    }

    fn write_double_quoted(&mut self, text: &str) {
        self.write_indicator("\"", true, false, false);
        // libyaml's `is_bom` looks at the value's start whatever the position: a value that
        // starts with a byte order mark has every character escaped.
        let starts_with_bom = text.starts_with('\u{feff}');
        for character in text.chars() {
            if !is_printable(character)
                || starts_with_bom
                || is_break(character)
                || character == '"'
                || character == '\\'
            {
                self.put('\\');
                match escape(character) {
                    Ok(short) => self.put(short),
                    Err(code) => {
                        let (letter, digits) = match code {
                            0..=0xFF => ('x', 2),
                            0x100..=0xFFFF => ('u', 4),
                            _ => ('U', 8),
                        };
                        self.put(letter);
                        for digit in (0..digits).rev() {
                            let nibble = (code >> (digit * 4)) & 0xF;
                            self.put(
                                char::from_digit(nibble, 16)
                                    .map_or('0', |d| d.to_ascii_uppercase()),
                            );
                        }
                    }
                }
            } else {
                self.put(character);
            }
        }
        self.write_indicator("\"", false, false, false);
        self.whitespace = false;
        self.indention = false;
    }

    fn write_literal(&mut self, text: &str) {
        self.write_indicator("|", true, false, false);
        // The hints: an indentation indicator when the text starts with a space or a break,
        // and the chomping of its final breaks.
        if text.starts_with(|c: char| c == ' ' || is_break(c)) {
            let hint = char::from_digit(INDENT as u32, 10).unwrap_or('4');
            self.write_indicator(&hint.to_string(), false, false, false);
        }
        let mut last = text.chars().rev();
        let chomp = match (last.next(), last.next()) {
            (None, _) => Some('-'),
            (Some(end), _) if !is_break(end) => Some('-'),
            (Some(_), None) => Some('+'),
            (Some(_), Some(before)) if is_break(before) => Some('+'),
            _ => None,
        };
        if let Some(chomp) = chomp {
            self.write_indicator(&chomp.to_string(), false, false, false);
        }
        self.put_break();
        self.whitespace = true;
        let mut breaks = true;
        for character in text.chars() {
            if is_break(character) {
                self.write_break(character);
                breaks = true;
            } else {
                if breaks {
                    self.write_indent();
                }
                self.put(character);
                self.indention = false;
                breaks = false;
            }
        }
    }
}

/// A key fits on one line before its `:` (`yaml_emitter_check_simple_key`).
fn is_simple_key(key: &str) -> bool {
    !key.chars().any(is_break) && key.len() <= SIMPLE_KEY_MAX
}

/// `yaml_emitter_select_scalar_style`.
fn select_style(wanted: Style, analysis: &Analysis, simple_key: bool) -> Style {
    let mut style = wanted;
    if simple_key && analysis.multiline {
        style = Style::DoubleQuoted;
    }
    if style == Style::Plain && (!analysis.block_plain_allowed || (analysis.empty && simple_key)) {
        style = Style::SingleQuoted;
    }
    if style == Style::SingleQuoted && !analysis.single_quoted_allowed {
        style = Style::DoubleQuoted;
    }
    if style == Style::Literal && (!analysis.block_allowed || simple_key) {
        style = Style::DoubleQuoted;
    }
    style
}

/// What a scalar's text allows (`yaml_emitter_analyze_scalar`, block context only).
struct Analysis {
    empty: bool,
    multiline: bool,
    block_plain_allowed: bool,
    single_quoted_allowed: bool,
    block_allowed: bool,
}

impl Analysis {
    fn of(text: &str) -> Self {
        if text.is_empty() {
            return Analysis {
                empty: true,
                multiline: false,
                block_plain_allowed: true,
                single_quoted_allowed: true,
                block_allowed: false,
            };
        }
        let characters: Vec<char> = text.chars().collect();
        let mut block_indicators = text.starts_with("---") || text.starts_with("...");
        let (mut line_breaks, mut special_characters, mut tab_characters) = (false, false, false);
        let (mut leading_space, mut leading_break) = (false, false);
        let (mut trailing_space, mut trailing_break) = (false, false);
        let (mut break_space, mut space_break) = (false, false);
        let (mut previous_space, mut previous_break) = (false, false);
        let mut preceded_by_whitespace = true;
        for (i, &character) in characters.iter().enumerate() {
            let next = characters.get(i + 1).copied();
            let followed_by_whitespace = next.is_none_or(|c| c == ' ' || c == '\t');
            let last = next.is_none();
            if i == 0 {
                match character {
                    '#' | ',' | '[' | ']' | '{' | '}' | '&' | '*' | '!' | '|' | '>' | '\''
                    | '"' | '%' | '@' | '`' => block_indicators = true,
                    '?' | ':' | '-' if followed_by_whitespace => block_indicators = true,
                    _ => {}
                }
            } else {
                match character {
                    ':' if followed_by_whitespace => block_indicators = true,
                    '#' if preceded_by_whitespace => block_indicators = true,
                    _ => {}
                }
            }
            if character == '\t' {
                tab_characters = true;
            } else if !is_printable(character) {
                special_characters = true;
            }
            if character == ' ' {
                leading_space |= i == 0;
                trailing_space |= last;
                break_space |= previous_break;
                previous_space = true;
                previous_break = false;
            } else if is_break(character) {
                line_breaks = true;
                leading_break |= i == 0;
                trailing_break |= last;
                space_break |= previous_space;
                previous_space = false;
                previous_break = true;
            } else {
                previous_space = false;
                previous_break = false;
            }
            preceded_by_whitespace =
                character == ' ' || character == '\t' || character == '\0' || is_break(character);
        }
        let mut analysis = Analysis {
            empty: false,
            multiline: line_breaks,
            block_plain_allowed: true,
            single_quoted_allowed: true,
            block_allowed: true,
        };
        if leading_space || leading_break || trailing_space || trailing_break {
            analysis.block_plain_allowed = false;
        }
        if trailing_space {
            analysis.block_allowed = false;
        }
        if break_space || space_break || tab_characters || special_characters {
            analysis.block_plain_allowed = false;
            analysis.single_quoted_allowed = false;
        }
        if space_break || special_characters {
            analysis.block_allowed = false;
        }
        if line_breaks || block_indicators {
            analysis.block_plain_allowed = false;
        }
        analysis
    }
}

/// libyaml's `is_break`: CR, LF, NEL, LS and PS.
fn is_break(character: char) -> bool {
    matches!(character, '\r' | '\n' | '\u{85}' | '\u{2028}' | '\u{2029}')
}

/// libyaml's `is_printable` (which leaves out tabs, carriage returns and characters beyond the
/// Basic Multilingual Plane).
fn is_printable(character: char) -> bool {
    matches!(character, '\n' | ' '..='~' | '\u{a0}'..='\u{d7ff}')
        || (('\u{e000}'..='\u{fffd}').contains(&character) && character != '\u{feff}')
}

/// A character's short escape in a double-quoted scalar, or its code point for `\x`, `\u` or
/// `\U`.
fn escape(character: char) -> Result<char, u32> {
    Ok(match character {
        '\0' => '0',
        '\u{7}' => 'a',
        '\u{8}' => 'b',
        '\t' => 't',
        '\n' => 'n',
        '\u{b}' => 'v',
        '\u{c}' => 'f',
        '\r' => 'r',
        '\u{1b}' => 'e',
        '"' => '"',
        '\\' => '\\',
        '\u{85}' => 'N',
        '\u{a0}' => '_',
        '\u{2028}' => 'L',
        '\u{2029}' => 'P',
        other => return Err(u32::from(other)),
    })
}

/// Whether YAML reads `text`, written plain, back as the same string (resolve.go's `resolve`
/// finds `!!str`): not a null, a bool, a number, a timestamp or the merge key.
fn resolves_to_string(text: &str) -> bool {
    const OTHER_TYPES: &[&str] = &[
        "", "~", "null", "Null", "NULL", "true", "True", "TRUE", "false", "False", "FALSE", ".nan",
        ".NaN", ".NAN", ".inf", ".Inf", ".INF", "+.inf", "+.Inf", "+.INF", "-.inf", "-.Inf",
        "-.INF",
    ];
    if OTHER_TYPES.contains(&text) {
        return false;
    }
    match text.as_bytes()[0] {
        b'.' => !is_go_float(text),
        b'0'..=b'9' | b'+' | b'-' => {
            if is_timestamp(text) {
                return false;
            }
            let plain = text.replace('_', "");
            !(is_go_integer(&plain)
                || (is_yaml_style_float(&plain) && is_go_float(&plain))
                || prefixed_integer(&plain, "0b", 2)
                || prefixed_integer(&plain, "0o", 8))
        }
        _ => true,
    }
}

/// `strconv.ParseInt(text, 0, 64)` or `ParseUint` succeeds: decimal, `0x`, `0o`, `0b` or a
/// leading-zero octal, with an optional sign (unsigned: none), within 64 bits.
fn is_go_integer(text: &str) -> bool {
    let (negative, unsigned) = match text.as_bytes().first() {
        Some(b'-') => (true, &text[1..]),
        Some(b'+') => (false, &text[1..]),
        _ => (false, text),
    };
    let (radix, digits) = match unsigned.get(..2) {
        Some("0x" | "0X") => (16, &unsigned[2..]),
        Some("0o" | "0O") => (8, &unsigned[2..]),
        Some("0b" | "0B") => (2, &unsigned[2..]),
        _ if unsigned.len() > 1 && unsigned.starts_with('0') => (8, &unsigned[1..]),
        _ => (10, unsigned),
    };
    if digits.is_empty() || !digits.chars().all(|c| c.is_digit(radix)) {
        return false;
    }
    // Within 64 bits: an unsigned value of any size (`ParseUint`), a negative one down to
    // `i64::MIN`.
    u64::from_str_radix(digits, radix).is_ok_and(|magnitude| !negative || magnitude <= 1 << 63)
}

/// resolve.go's `0b`/`0o` prefixes after `ParseInt` failed (`-0b…`, `-0o…` too).
fn prefixed_integer(text: &str, prefix: &str, radix: u32) -> bool {
    let digits = text.strip_prefix(prefix).or_else(|| {
        text.strip_prefix('-')
            .and_then(|rest| rest.strip_prefix(prefix))
    });
    digits.is_some_and(|digits| {
        !digits.is_empty()
            && digits.chars().all(|c| c.is_digit(radix))
            && u64::from_str_radix(digits, radix).is_ok()
    })
}

/// resolve.go's `yamlStyleFloat`: `^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?$`.
fn is_yaml_style_float(text: &str) -> bool {
    let bytes = text.as_bytes();
    let mut i = usize::from(matches!(bytes.first(), Some(b'-' | b'+')));
    let digits = |i: &mut usize| {
        let start = *i;
        while bytes.get(*i).is_some_and(u8::is_ascii_digit) {
            *i += 1;
        }
        *i - start
    };
    if bytes.get(i) == Some(&b'.') {
        i += 1;
        if digits(&mut i) == 0 {
            return false;
        }
    } else {
        if digits(&mut i) == 0 {
            return false;
        }
        if bytes.get(i) == Some(&b'.') {
            i += 1;
            digits(&mut i);
        }
    }
    if matches!(bytes.get(i), Some(b'e' | b'E')) {
        i += 1;
        if matches!(bytes.get(i), Some(b'-' | b'+')) {
            i += 1;
        }
        if digits(&mut i) == 0 {
            return false;
        }
    }
    i == bytes.len()
}

/// `strconv.ParseFloat(text, 64)` succeeds (hexadecimal floats, `inf`, `nan` and
/// underscores between digits included; out of range refused).
fn is_go_float(text: &str) -> bool {
    let unsigned = text.strip_prefix(['+', '-']).unwrap_or(text);
    let lower = unsigned.to_ascii_lowercase();
    if matches!(lower.as_str(), "inf" | "infinity" | "nan") {
        return true;
    }
    if let Some(hex) = lower.strip_prefix("0x") {
        return is_hex_float(hex);
    }
    if !is_yaml_style_float(unsigned) && !unsigned.ends_with('.') {
        return false;
    }
    unsigned.parse::<f64>().is_ok_and(f64::is_finite)
}

/// A hexadecimal float's mantissa and its required `p` exponent.
fn is_hex_float(text: &str) -> bool {
    let Some((mantissa, exponent)) = text.split_once('p') else {
        return false;
    };
    let mantissa = mantissa.replacen('.', "", 1);
    let exponent = exponent.strip_prefix(['+', '-']).unwrap_or(exponent);
    !mantissa.is_empty()
        && mantissa.chars().all(|c| c.is_ascii_hexdigit())
        && !exponent.is_empty()
        && exponent.chars().all(|c| c.is_ascii_digit())
}

/// resolve.go's `parseTimestamp`: a date (`2006-1-2`), or a date and time in one of the
/// layouts YAML allows, which Go's `time.Parse` accepts.
fn is_timestamp(text: &str) -> bool {
    let year_digits = text.bytes().take_while(u8::is_ascii_digit).count();
    if year_digits != 4 || text.as_bytes().get(4) != Some(&b'-') {
        return false;
    }
    let mut cursor = Cursor { text, at: 5 };
    let year: u32 = text[..4].parse().unwrap_or(0);
    let Some(month) = cursor.number(1, 2) else {
        return false;
    };
    if !cursor.eat(b'-') {
        return false;
    }
    let Some(day) = cursor.number(1, 2) else {
        return false;
    };
    if !(1..=12).contains(&month) || day < 1 || day > days_in_month(year, month) {
        return false;
    }
    if cursor.done() {
        return true;
    }
    let separator = cursor.next();
    if !matches!(separator, Some(b'T' | b't' | b' ')) {
        return false;
    }
    let time = (|| {
        let hour = cursor.number(1, 2)?;
        cursor.eat(b':').then_some(())?;
        let minute = cursor.number(1, 2)?;
        cursor.eat(b':').then_some(())?;
        let second = cursor.number(1, 2)?;
        (hour < 24 && minute < 60 && second < 60).then_some(())
    })();
    if time.is_none() {
        return false;
    }
    if cursor.eat(b'.') && cursor.number(1, 9).is_none() {
        return false;
    }
    if separator == Some(b' ') {
        return cursor.done();
    }
    // `Z07:00`: `Z`, or a sign, two digits, a colon and two digits.
    if cursor.eat(b'Z') {
        return cursor.done();
    }
    if !(cursor.eat(b'+') || cursor.eat(b'-')) {
        return false;
    }
    let zone = (|| {
        let hours = cursor.exactly(2)?;
        cursor.eat(b':').then_some(())?;
        let minutes = cursor.exactly(2)?;
        (hours < 24 && minutes < 60).then_some(())
    })();
    zone.is_some() && cursor.done()
}

/// A reader of a timestamp's parts.
struct Cursor<'t> {
    text: &'t str,
    at: usize,
}

impl Cursor<'_> {
    fn done(&self) -> bool {
        self.at == self.text.len()
    }

    fn next(&mut self) -> Option<u8> {
        let byte = self.text.as_bytes().get(self.at).copied();
        self.at += 1;
        byte
    }

    fn eat(&mut self, byte: u8) -> bool {
        let matched = self.text.as_bytes().get(self.at) == Some(&byte);
        if matched {
            self.at += 1;
        }
        matched
    }

    /// Between `least` and `most` digits.
    fn number(&mut self, least: usize, most: usize) -> Option<u32> {
        let digits = self.text.as_bytes()[self.at..]
            .iter()
            .take(most)
            .take_while(|b| b.is_ascii_digit())
            .count();
        (digits >= least).then(|| {
            let value = self.text[self.at..self.at + digits]
                .parse()
                .unwrap_or(u32::MAX);
            self.at += digits;
            value
        })
    }

    fn exactly(&mut self, digits: usize) -> Option<u32> {
        self.number(digits, digits)
    }
}
