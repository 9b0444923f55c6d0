//! What Go's JSON decoder (`sigs.k8s.io/json`, as kube-apiserver decodes a request's object)
//! says of a body whose values do not fit the kind's Go types: the first type error in the
//! order of the document, `json: cannot unmarshal string into Go struct field
//! LimitedPriorityLevelConfiguration.spec.limited.nominalConcurrencyShares of type int32`.
//!
//! The Go types are kube-apiserver 1.37's own (`data/go-types.json`, written by
//! `go run ./golden gotypes` in `reference/`): each type as the decoder sees it, its name as
//! errors print it, a struct's fields by JSON name, and the types with decoders of their own.

use std::collections::HashMap;
use std::sync::OnceLock;

/// The decoder's view of the served kinds' Go types.
const GO_TYPES: &str = include_str!("../data/go-types.json");

/// One Go type.
#[derive(Debug, serde::Deserialize)]
pub(crate) struct GoType {
    pub(crate) kind: String,
    name: String,
    #[serde(default)]
    r#struct: String,
    #[serde(default)]
    pub(crate) fields: HashMap<String, String>,
    #[serde(default)]
    pub(crate) elem: String,
    #[serde(default)]
    bits: u32,
    #[serde(default)]
    custom: String,
    /// The fields tagged `omitempty`, by JSON name.
    #[serde(default)]
    pub(crate) omit: Vec<String>,
    /// The fields whose Go type is a pointer, by JSON name.
    #[serde(default)]
    pub(crate) pointers: Vec<String>,
}

/// The served kinds' Go types: the roots by `apiVersion/kind`, every type by its key.
#[derive(Debug, serde::Deserialize)]
pub(crate) struct Graph {
    pub(crate) roots: HashMap<String, String>,
    pub(crate) types: HashMap<String, GoType>,
}

/// The Go types, read once.
pub(crate) fn graph() -> &'static Graph {
    static GRAPH: OnceLock<Graph> = OnceLock::new();
    GRAPH.get_or_init(|| {
        serde_json::from_str(GO_TYPES).unwrap_or(Graph {
            roots: HashMap::new(),
            types: HashMap::new(),
        })
    })
}

/// The first type error Go's decoder meets in `body` (one JSON document, already read) decoded
/// as `api_version` `kind`; `None` when it meets none, or the kind is not one of kube's.
pub(crate) fn type_error(api_version: &str, kind: &str, body: &[u8]) -> Option<String> {
    let graph = graph();
    type_error_as(graph.roots.get(&format!("{api_version}/{kind}"))?, body)
}

/// What Go's decoder says of `metadata` (a value already read, written as Go's `json.Marshal`
/// writes it, keys sorted) decoded as an `ObjectMeta`, as apiextensions-apiserver decodes a
/// custom resource's metadata: `json: cannot unmarshal string into Go struct field
/// ObjectMeta.generation of type int64`; `None` when it decodes.
pub fn object_meta_error(metadata: &serde_json::Value) -> Option<String> {
    let body = serde_json::to_vec(metadata).ok()?;
    type_error_as("k8s.io/apimachinery/pkg/apis/meta/v1.ObjectMeta", &body)
}

/// The first type error Go's decoder meets in `body` decoded as the type of key `type_key`.
fn type_error_as(type_key: &str, body: &[u8]) -> Option<String> {
    let graph = graph();
    let root = graph.types.get(type_key)?;
    let mut walk = Walk {
        graph,
        bytes: body,
        at: 0,
        fields: Vec::new(),
        in_struct: None,
        depth: 0,
    };
    match walk.value(root) {
        Err(Stop::Mismatch(error)) => Some(error),
        Ok(()) | Err(Stop::Malformed) => None,
    }
}

/// Why the walk ended early.
enum Stop {
    /// Go's first type error.
    Mismatch(String),
    /// The bytes are not what the walk expects (not one JSON document).
    Malformed,
}

/// A walk of a document's bytes along a Go type, keeping what Go's decoder keeps for its
/// errors: the struct being decoded and the JSON names of the fields entered.
struct Walk<'a> {
    graph: &'a Graph,
    bytes: &'a [u8],
    at: usize,
    fields: Vec<&'a str>,
    in_struct: Option<&'a str>,
    /// Arrays and objects open at the cursor.
    depth: usize,
}

/// The deepest nesting walked; deeper bodies end the walk (the server's readers refuse them
/// long before).
const MAX_DEPTH: usize = 512;

impl<'a> Walk<'a> {
    fn skip_space(&mut self) {
        while self
            .bytes
            .get(self.at)
            .is_some_and(|b| matches!(b, b' ' | b'\t' | b'\r' | b'\n'))
        {
            self.at += 1;
        }
    }

    fn peek(&mut self) -> Result<u8, Stop> {
        self.skip_space();
        self.bytes.get(self.at).copied().ok_or(Stop::Malformed)
    }

    fn expect(&mut self, byte: u8) -> Result<(), Stop> {
        if self.peek()? == byte {
            self.at += 1;
            Ok(())
        } else {
            Err(Stop::Malformed)
        }
    }

    /// `UnmarshalTypeError`'s words for `what` decoded into a value of type `name`.
    fn mismatch(&self, what: &str, name: &str) -> Stop {
        Stop::Mismatch(match self.in_struct {
            Some(owner) => format!(
                "json: cannot unmarshal {what} into Go struct field {owner}.{} of type {name}",
                self.fields.join(".")
            ),
            None => format!("json: cannot unmarshal {what} into Go value of type {name}"),
        })
    }

    /// The text of the literal (string, number, `true`, `false`, `null`) at the cursor,
    /// consumed.
    fn literal(&mut self) -> Result<&'a str, Stop> {
        self.skip_space();
        let start = self.at;
        if self.bytes.get(start) == Some(&b'"') {
            let mut at = start + 1;
            loop {
                match self.bytes.get(at) {
                    Some(b'\\') => at += 2,
                    Some(b'"') => break,
                    Some(_) => at += 1,
                    None => return Err(Stop::Malformed),
                }
            }
            self.at = at + 1;
        } else {
            while self
                .bytes
                .get(self.at)
                .is_some_and(|b| !matches!(b, b',' | b'}' | b']' | b' ' | b'\t' | b'\r' | b'\n'))
            {
                self.at += 1;
            }
        }
        std::str::from_utf8(&self.bytes[start..self.at]).map_err(|_| Stop::Malformed)
    }

    /// Consumes one value whatever it holds.
    fn skip_value(&mut self) -> Result<(), Stop> {
        match self.peek()? {
            b'{' => {
                self.members(|walk, _| walk.skip_value())?;
            }
            b'[' => {
                self.elements(Walk::skip_value)?;
            }
            _ => {
                self.literal()?;
            }
        }
        Ok(())
    }

    /// Each member of the object at the cursor, its key given (unescaped), in order.
    fn members(
        &mut self,
        mut each: impl FnMut(&mut Self, &str) -> Result<(), Stop>,
    ) -> Result<(), Stop> {
        self.expect(b'{')?;
        self.enter()?;
        if self.peek()? != b'}' {
            loop {
                let raw = self.literal()?;
                let key: String = serde_json::from_str(raw).map_err(|_| Stop::Malformed)?;
                self.expect(b':')?;
                each(self, &key)?;
                if self.peek()? != b',' {
                    break;
                }
                self.at += 1;
            }
        }
        self.expect(b'}')?;
        self.depth -= 1;
        Ok(())
    }

    /// Each element of the array at the cursor, in order.
    fn elements(
        &mut self,
        mut each: impl FnMut(&mut Self) -> Result<(), Stop>,
    ) -> Result<(), Stop> {
        self.expect(b'[')?;
        self.enter()?;
        if self.peek()? != b']' {
            loop {
                each(self)?;
                if self.peek()? != b',' {
                    break;
                }
                self.at += 1;
            }
        }
        self.expect(b']')?;
        self.depth -= 1;
        Ok(())
    }

    /// One more array or object open; past [`MAX_DEPTH`] the walk ends.
    fn enter(&mut self) -> Result<(), Stop> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return Err(Stop::Malformed);
        }
        Ok(())
    }

    fn type_of(&self, key: &str) -> Result<&'a GoType, Stop> {
        self.graph.types.get(key).ok_or(Stop::Malformed)
    }

    /// One value decoded into `ty`, as Go's `decodeState.value` does.
    fn value(&mut self, ty: &'a GoType) -> Result<(), Stop> {
        let first = self.peek()?;
        match ty.kind.as_str() {
            "any" => return self.skip_value(),
            "custom" => return self.custom(ty, first),
            _ => {}
        }
        match first {
            b'{' => match ty.kind.as_str() {
                "struct" => self.object(ty),
                "map" => {
                    let elem = self.type_of(&ty.elem)?;
                    self.members(|walk, _| walk.value(elem))
                }
                _ => Err(self.mismatch("object", &ty.name)),
            },
            b'[' => match ty.kind.as_str() {
                "slice" => {
                    let elem = self.type_of(&ty.elem)?;
                    self.elements(|walk| walk.value(elem))
                }
                _ => Err(self.mismatch("array", &ty.name)),
            },
            _ => {
                let literal = self.literal()?;
                self.literal_into(literal, ty)
            }
        }
    }

    /// A struct's members: each known field (matched exactly, as `sigs.k8s.io/json` matches)
    /// decoded with the struct and the field in the error's context; others skipped.
    fn object(&mut self, ty: &'a GoType) -> Result<(), Stop> {
        self.members(|walk, key| match ty.fields.get_key_value(key) {
            Some((name, field)) => {
                let field = walk.type_of(field)?;
                let (depth, owner) = (walk.fields.len(), walk.in_struct);
                walk.fields.push(name);
                walk.in_struct = Some(&ty.r#struct);
                walk.value(field)?;
                walk.fields.truncate(depth);
                walk.in_struct = owner;
                Ok(())
            }
            None => walk.skip_value(),
        })
    }

    /// `literalStore`: `null` into anything; a bool, string or number into a type of its kind,
    /// a number within the type's range.
    fn literal_into(&self, literal: &str, ty: &GoType) -> Result<(), Stop> {
        let kind = ty.kind.as_str();
        match literal.as_bytes().first() {
            None => Err(Stop::Malformed),
            Some(b'n') => Ok(()),
            Some(b't' | b'f') if kind == "bool" => Ok(()),
            Some(b't' | b'f') => Err(self.mismatch("bool", &ty.name)),
            Some(b'"') if kind == "bytes" => {
                let text: String = serde_json::from_str(literal).map_err(|_| Stop::Malformed)?;
                match base64_error(text.as_bytes()) {
                    Some(at) => Err(Stop::Mismatch(format!(
                        "illegal base64 data at input byte {at}"
                    ))),
                    None => Ok(()),
                }
            }
            Some(b'"') if kind == "string" => Ok(()),
            Some(b'"') => Err(self.mismatch("string", &ty.name)),
            Some(_) => match kind {
                "int" | "uint" | "float" if fits(literal, kind, ty.bits) => Ok(()),
                "int" | "uint" | "float" => {
                    Err(self.mismatch(&format!("number {literal}"), &ty.name))
                }
                _ => Err(self.mismatch("number", &ty.name)),
            },
        }
    }

    /// A type with an `UnmarshalJSON` of its own: apimachinery's `Time` (a string, read by
    /// Go into a string first), `IntOrString` (a string, or an `int32`), and the ones that
    /// take any JSON (`FieldsV1`, apiextensions' `JSON` and schema unions).
    fn custom(&mut self, ty: &'a GoType, first: u8) -> Result<(), Stop> {
        let into = match ty.custom.as_str() {
            custom @ ("v1.Time" | "v1.MicroTime") if first == b'"' => {
                let literal = self.literal()?;
                let text: String = serde_json::from_str(literal).map_err(|_| Stop::Malformed)?;
                let micro = custom == "v1.MicroTime";
                return match rfc3339_error(text.as_bytes(), micro) {
                    Some(error) => Err(Stop::Mismatch(error)),
                    None => Ok(()),
                };
            }
            "v1.Time" | "v1.MicroTime" => ("string", "string", 0),
            "intstr.IntOrString" if first == b'"' => return self.skip_value(),
            "intstr.IntOrString" => ("int", "int32", 32),
            _ => return self.skip_value(),
        };
        let what = match first {
            b'{' => Some("object"),
            b'[' => Some("array"),
            _ => None,
        };
        if let Some(what) = what {
            return Err(self.mismatch(what, into.1));
        }
        let literal = self.literal()?;
        let inner = GoType {
            kind: into.0.to_owned(),
            name: into.1.to_owned(),
            r#struct: String::new(),
            fields: HashMap::new(),
            elem: String::new(),
            bits: into.2,
            custom: String::new(),
            omit: Vec::new(),
            pointers: Vec::new(),
        };
        self.literal_into(literal, &inner)
    }
}

/// Where Go's `base64.StdEncoding.Decode` (what `encoding/json` reads a `[]byte` with) finds
/// `text` corrupt: its `CorruptInputError` offset (`decodeQuantum`: line breaks skipped, `=`
/// only as the padding of a quantum's last one or two characters, nothing after it but line
/// breaks); `None` when it decodes.
fn base64_error(text: &[u8]) -> Option<usize> {
    let alphabet = |c: u8| c.is_ascii_alphanumeric() || c == b'+' || c == b'/';
    let newline = |c: u8| c == b'\n' || c == b'\r';
    let mut at = 0;
    loop {
        // One quantum of four characters.
        let mut j = 0;
        while j < 4 {
            let Some(&c) = text.get(at) else {
                return (j != 0).then_some(at - j);
            };
            at += 1;
            if alphabet(c) {
                j += 1;
                continue;
            }
            if newline(c) {
                continue;
            }
            if c != b'=' || j < 2 {
                return Some(at - 1);
            }
            if j == 2 {
                // `==` is wanted: the second `=`, after any line breaks.
                while text.get(at).copied().is_some_and(newline) {
                    at += 1;
                }
                match text.get(at) {
                    None => return Some(text.len()),
                    Some(b'=') => at += 1,
                    Some(_) => return Some(at - 1),
                }
            }
            while text.get(at).copied().is_some_and(newline) {
                at += 1;
            }
            return (at < text.len()).then_some(at);
        }
    }
}

/// What apimachinery's `MicroTime` says of `text` as the string of a JSON value (Go's
/// `time.Parse` with `RFC3339Micro`, which wants six digits of a second), or `None` when it
/// reads it. A kind with `MicroTime` fields refuses in its decoding what this refuses (which
/// k8s-openapi's type takes), so that the server answers with Go's decoder's words.
pub fn micro_time_error(text: &str) -> Option<String> {
    rfc3339_error(text.as_bytes(), true)
}

/// What Go's `time.Parse(time.RFC3339, value)` answers for a value it cannot parse (as
/// apimachinery's `Time` reads a string): its layout walked element by element as Go's
/// `parse` walks `2006-01-02T15:04:05Z07:00`, with Go's words for where it stopped or what
/// is out of range; `None` for a time it reads. With `micro`, the layout is `MicroTime`'s
/// `RFC3339Micro`, `2006-01-02T15:04:05.000000Z07:00`, whose fraction of a second is
/// required with exactly six digits.
fn rfc3339_error(value: &[u8], micro: bool) -> Option<String> {
    const LAYOUT: &str = "2006-01-02T15:04:05Z07:00";
    const MICRO_LAYOUT: &str = "2006-01-02T15:04:05.000000Z07:00";
    let layout = if micro { MICRO_LAYOUT } else { LAYOUT };
    let whole = go_time_quote(value);
    let cannot = |element: &str, rest: &[u8]| {
        Some(format!(
            "parsing time {whole} as {}: cannot parse {} as {}",
            go_time_quote(layout.as_bytes()),
            go_time_quote(rest),
            go_time_quote(element.as_bytes())
        ))
    };
    let out_of_range = |what: &str| Some(format!("parsing time {whole}: {what} out of range"));
    let digit = |rest: &[u8], i: usize| rest.get(i).is_some_and(u8::is_ascii_digit);
    // `getnum`: one or two digits (two when `fixed`).
    let number = |rest: &[u8], fixed: bool| -> Option<(u32, usize)> {
        if !digit(rest, 0) {
            return None;
        }
        if !digit(rest, 1) {
            return (!fixed).then(|| (u32::from(rest[0] - b'0'), 1));
        }
        Some((
            u32::from(rest[0] - b'0') * 10 + u32::from(rest[1] - b'0'),
            2,
        ))
    };
    let mut rest = value;
    // The year: four characters, the first a digit, read by `atoi` (a sign and digits).
    if rest.len() < 4 || !digit(rest, 0) || !rest[1..4].iter().all(u8::is_ascii_digit) {
        return cannot("2006", rest);
    }
    let year: i64 = std::str::from_utf8(&rest[..4]).ok()?.parse().ok()?;
    rest = &rest[4..];
    let mut fields = [0u32; 5];
    for (index, (prefix, element, fixed, limit, name)) in [
        (b'-', "01", true, 13, "month"),
        (b'-', "02", true, 100, ""),
        (b'T', "15", false, 24, "hour"),
        (b':', "04", true, 60, "minute"),
        (b':', "05", true, 60, "second"),
    ]
    .into_iter()
    .enumerate()
    {
        if rest.first() != Some(&prefix) {
            return cannot(std::str::from_utf8(&[prefix]).ok()?, rest);
        }
        rest = &rest[1..];
        let Some((n, used)) = number(rest, fixed) else {
            return cannot(element, rest);
        };
        if n >= limit || (name == "month" && n == 0) {
            return out_of_range(name);
        }
        fields[index] = n;
        rest = &rest[used..];
    }
    if micro {
        // `stdFracSecond0`: exactly `.` (or `,`) and six characters, read by `atoi` (a sign
        // and digits); a negative fraction is out of range.
        let fraction = rest.get(1..7).filter(|_| matches!(rest[0], b'.' | b','));
        let Some(fraction) = fraction else {
            return cannot(".000000", rest);
        };
        let (negative, digits) = match fraction.split_first() {
            Some((b'-', digits)) => (true, digits),
            Some((b'+', digits)) => (false, digits),
            _ => (false, fraction),
        };
        if digits.is_empty() || !digits.iter().all(u8::is_ascii_digit) {
            return cannot(".000000", rest);
        }
        if negative && digits.iter().any(|&d| d != b'0') {
            return out_of_range("fractional second");
        }
        rest = &rest[7..];
    } else if rest.len() >= 2 && matches!(rest[0], b'.' | b',') && digit(rest, 1) {
        // A fraction of a second the layout does not name is read all the same.
        let digits = rest[1..].iter().take_while(|b| b.is_ascii_digit()).count();
        rest = &rest[1 + digits..];
    }
    // `Z07:00`: `Z`, or a sign, two digits, `:` and two digits.
    if rest.first() == Some(&b'Z') {
        rest = &rest[1..];
    } else {
        if rest.len() < 6 || rest[3] != b':' {
            return cannot("Z07:00", rest);
        }
        let (Some((hours, 2)), Some((minutes, 2))) =
            (number(&rest[1..3], true), number(&rest[4..6], true))
        else {
            return cannot("Z07:00", rest);
        };
        if minutes > 60 {
            return out_of_range("time zone offset minute");
        }
        if hours > 24 {
            return out_of_range("time zone offset hour");
        }
        if !matches!(rest[0], b'+' | b'-') {
            return cannot("Z07:00", rest);
        }
        rest = &rest[6..];
    }
    if !rest.is_empty() {
        return Some(format!(
            "parsing time {whole}: extra text: {}",
            go_time_quote(rest)
        ));
    }
    let [month, day, ..] = fields;
    let leap = year % 4 == 0 && (year % 100 != 0 || year % 400 == 0);
    let days = match month {
        2 if leap => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    };
    (day < 1 || day > days).then(|| format!("parsing time {whole}: day out of range"))
}

/// The time package's own `quote`: `"` and `\` escaped, bytes below a space or outside ASCII
/// as `\xHH`.
fn go_time_quote(value: &[u8]) -> String {
    let mut out = String::from('"');
    for &byte in value {
        match byte {
            b'"' | b'\\' => {
                out.push('\\');
                out.push(char::from(byte));
            }
            0x20..=0x7e => out.push(char::from(byte)),
            _ => out.push_str(&format!("\\x{byte:02x}")),
        }
    }
    out.push('"');
    out
}

/// Whether a number literal decodes into a Go integer (`strconv.ParseInt`/`ParseUint` and the
/// type's range) or float (`ParseFloat` within its size) of `bits` bits.
fn fits(literal: &str, kind: &str, bits: u32) -> bool {
    match kind {
        "int" => literal.parse::<i64>().is_ok_and(|n| {
            bits >= 64 || (-(1i64 << (bits - 1))..(1i64 << (bits - 1))).contains(&n)
        }),
        "uint" => literal
            .parse::<u64>()
            .is_ok_and(|n| bits >= 64 || n < (1u64 << bits)),
        _ => literal
            .parse::<f64>()
            .is_ok_and(|n| n.is_finite() && (bits >= 64 || f64::from(n as f32).is_finite())),
    }
}

/// What apimachinery's unstructured converter (`runtime.DefaultUnstructuredConverter`, which
/// kube-apiserver takes a strategic-merge-patched object into its Go type with) does to
/// `object`: a whole float into an integer field becomes that integer, as Go converts it;
/// the first value its Go type cannot take is an error in the converter's words
/// (`unrecognized type: int32`, `cannot convert int64 to string`, `cannot restore struct
/// from: string`). Nothing happens when the kind is not one of kube's. Members are visited in
/// sorted order, where Go visits a struct's fields in their declared order and a map's in
/// random order: with one wrong value, the same.
pub(crate) fn convert_unstructured(
    api_version: &str,
    kind: &str,
    object: &mut serde_json::Value,
) -> Result<(), String> {
    let graph = graph();
    let Some(root) = graph
        .roots
        .get(&format!("{api_version}/{kind}"))
        .and_then(|key| graph.types.get(key))
    else {
        return Ok(());
    };
    convert(graph, object, root, 0)
}

/// `fromUnstructured` of `value` into `ty`.
fn convert(
    graph: &Graph,
    value: &mut serde_json::Value,
    ty: &GoType,
    depth: usize,
) -> Result<(), String> {
    use serde_json::Value;
    let source = match value {
        Value::Null => return Ok(()),
        Value::String(_) => "string",
        Value::Bool(_) => "bool",
        Value::Number(n) if n.is_i64() || n.is_u64() => "int64",
        Value::Number(_) => "float64",
        Value::Object(_) => "map",
        Value::Array(_) => "slice",
    };
    if depth > MAX_DEPTH {
        return Ok(());
    }
    let element = |key: &str| graph.types.get(key);
    match (ty.kind.as_str(), value) {
        ("struct", Value::Object(members)) => {
            for (name, member) in members {
                if let Some(field) = ty.fields.get(name).and_then(|key| element(key)) {
                    convert(graph, member, field, depth + 1)?;
                }
            }
            Ok(())
        }
        ("struct", _) => Err(format!("cannot restore struct from: {source}")),
        ("map", Value::Object(members)) => match element(&ty.elem) {
            Some(elem) => members
                .values_mut()
                .try_for_each(|member| convert(graph, member, elem, depth + 1)),
            None => Ok(()),
        },
        ("map", _) => Err(format!("cannot restore map from {source}")),
        ("slice", Value::Array(items)) => match element(&ty.elem) {
            Some(elem) => items
                .iter_mut()
                .try_for_each(|item| convert(graph, item, elem, depth + 1)),
            None => Ok(()),
        },
        ("bytes", Value::String(_) | Value::Array(_)) => Ok(()),
        ("slice" | "bytes", _) => Err(format!("cannot restore slice from {source}")),
        // Types that read JSON themselves take what their `UnmarshalJSON` takes.
        ("custom" | "any", _) => Ok(()),
        (target, value) => simple(source, value, target, ty),
    }
}

/// A value into a type of a simple kind: what Go's reflect may assign or convert, within
/// JSON's groups (bools, integers, floats, strings); a whole float into an integer
/// converted.
fn simple(
    source: &str,
    value: &mut serde_json::Value,
    target: &str,
    ty: &GoType,
) -> Result<(), String> {
    let whole = value.as_f64().filter(|f| *f == f.trunc());
    let fits = match (source, target) {
        ("string", "string") | ("bool", "bool") => true,
        ("int64", "int" | "uint" | "float") => true,
        ("float64", "float") => true,
        ("float64", "int" | "uint") => whole.is_some(),
        _ => false,
    };
    if fits {
        if source == "float64"
            && target != "float"
            && let Some(number) = whole.and_then(|f| serde_json::Number::from_i128(f as i128))
        {
            *value = serde_json::Value::Number(number);
        }
        return Ok(());
    }
    // Go converts an integer to a string (a rune), and a float to an integer, but not as
    // JSON would: refused by name. Nothing else converts.
    let convertible = matches!(
        (source, target),
        ("int64", "string") | ("float64", "int" | "uint")
    );
    Err(if convertible {
        format!("cannot convert {source} to {}", ty.name)
    } else {
        let kind = match target {
            "int" | "uint" | "float" => format!("{target}{}", ty.bits),
            other => other.to_owned(),
        };
        format!("unrecognized type: {kind}")
    })
}

/// A JSON value as Go's `%+v` prints the `map[string]interface{}` it decodes into: maps with
/// their keys sorted (`map[a:1 b:map[c:x]]`), lists spaced (`[a b]`), strings bare, `<nil>`.
pub(crate) fn go_plus_v(value: &serde_json::Value) -> String {
    use serde_json::Value;
    match value {
        Value::Null => "<nil>".to_owned(),
        Value::String(text) => text.clone(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => match n.as_i64() {
            Some(i) => i.to_string(),
            None => apfkit_runtime::field::go_float(n.as_f64().unwrap_or(f64::NAN)),
        },
        Value::Array(items) => {
            let items: Vec<String> = items.iter().map(go_plus_v).collect();
            format!("[{}]", items.join(" "))
        }
        Value::Object(members) => {
            let members: Vec<String> = members
                .iter()
                .map(|(key, member)| format!("{key}:{}", go_plus_v(member)))
                .collect();
            format!("map[{}]", members.join(" "))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{base64_error, type_error};

    const LEVELS: &str = "flowcontrol.apiserver.k8s.io/v1";

    #[test]
    fn every_served_kind_has_its_go_type() {
        let graph = super::graph();
        assert!(graph.roots.len() >= 11);
        for (root, key) in &graph.roots {
            assert!(graph.types.contains_key(key), "{root}");
        }
        for ty in graph.types.values() {
            for field in ty
                .fields
                .values()
                .chain(Some(&ty.elem).filter(|e| !e.is_empty()))
            {
                assert!(graph.types.contains_key(field), "{}: {field}", ty.name);
            }
        }
    }

    #[test]
    fn type_errors_are_gos() {
        let level = |spec: &str| {
            format!(
                r#"{{"kind":"PriorityLevelConfiguration","metadata":{{"name":"x"}},"spec":{spec}}}"#
            )
        };
        for (spec, expected) in [
            (
                r#"{"limited":{"nominalConcurrencyShares":"high"}}"#,
                "json: cannot unmarshal string into Go struct field LimitedPriorityLevelConfiguration.spec.limited.nominalConcurrencyShares of type int32",
            ),
            (
                r#"{"limited":{"nominalConcurrencyShares":1e+20}}"#,
                "json: cannot unmarshal number 1e+20 into Go struct field LimitedPriorityLevelConfiguration.spec.limited.nominalConcurrencyShares of type int32",
            ),
            (
                r#"{"type":1}"#,
                "json: cannot unmarshal number into Go struct field PriorityLevelConfigurationSpec.spec.type of type v1.PriorityLevelEnablement",
            ),
            (
                r#""spec""#,
                "json: cannot unmarshal string into Go struct field PriorityLevelConfiguration.spec of type v1.PriorityLevelConfigurationSpec",
            ),
        ] {
            assert_eq!(
                type_error(LEVELS, "PriorityLevelConfiguration", level(spec).as_bytes()).as_deref(),
                Some(expected),
                "{spec}"
            );
        }
        // The first in the document's order; unknown and null members are no error.
        assert_eq!(
            type_error(
                LEVELS,
                "PriorityLevelConfiguration",
                br#"{"spec":{"type":null,"x":[1],"limited":{"queuing":{},"nominalConcurrencyShares":2}},"metadata":{"labels":{"a":1}}}"#
            )
            .as_deref(),
            Some("json: cannot unmarshal number into Go struct field ObjectMeta.metadata.labels of type string")
        );
        assert_eq!(
            type_error(
                LEVELS,
                "PriorityLevelConfiguration",
                br#"{"spec":{"limited":{"nominalConcurrencyShares":5}}}"#
            ),
            None
        );
        assert_eq!(type_error("example.com/v1", "Widget", b"{}"), None);
    }

    #[test]
    fn metadata_decoded_alone_is_named_as_an_object_meta() {
        use super::object_meta_error;
        use serde_json::json;
        for (metadata, expected) in [
            (
                json!({"name": "a", "generation": "one"}),
                "json: cannot unmarshal string into Go struct field ObjectMeta.generation of type int64",
            ),
            (
                json!({"labels": {"a": 1}}),
                "json: cannot unmarshal number into Go struct field ObjectMeta.labels of type string",
            ),
            (
                json!("holder"),
                "json: cannot unmarshal string into Go value of type v1.ObjectMeta",
            ),
            (
                json!({"ownerReferences": [{"uid": 5}]}),
                "json: cannot unmarshal number into Go struct field OwnerReference.ownerReferences.uid of type types.UID",
            ),
        ] {
            assert_eq!(
                object_meta_error(&metadata).as_deref(),
                Some(expected),
                "{metadata}"
            );
        }
        // Keys in Go's sorted order: `finalizers` is met before `labels`.
        assert_eq!(
            object_meta_error(&json!({"labels": [], "finalizers": "f"})).as_deref(),
            Some(
                "json: cannot unmarshal string into Go struct field ObjectMeta.finalizers of type []string"
            )
        );
        for decodes in [json!(null), json!({}), json!({"name": "a", "unknown": [1]})] {
            assert_eq!(object_meta_error(&decodes), None, "{decodes}");
        }
    }

    #[test]
    fn cut_and_garbled_bodies_end_the_walk_without_a_panic() {
        let body = br#"{"metadata":{"name":"x","labels":{"a":"b"}},"spec":{"ports":[{"port":80,"targetPort":"http"}],"selector":{"a":"b"},"clusterIP":"None"}}"#;
        for end in 0..body.len() {
            let _ = type_error("v1", "Service", &body[..end]);
            let mut garbled = body.to_vec();
            garbled[end] = b"\"{}[],:x1"[end % 9];
            let _ = type_error("v1", "Service", &garbled);
        }
        let deep = format!("{}{}", "[".repeat(5000), "]".repeat(5000));
        assert_eq!(
            type_error(
                "v1",
                "Service",
                format!(r#"{{"spec":{{"x":{deep}}}}}"#).as_bytes()
            ),
            None
        );
    }

    /// Every value of `tests/data/times.jsonl` read as apimachinery's `Time` reads it (Go's
    /// answers made in `reference/` with `go run ./golden times <
    /// ../apiserver/tests/data/times.jsonl > ../apiserver/tests/data/times-cases.jsonl`).
    #[test]
    fn times_are_parsed_as_go_parses_them() {
        let cases: Vec<(serde_json::Value, Option<String>)> =
            include_str!("../tests/data/times-cases.jsonl")
                .lines()
                .map(|line| serde_json::from_str(line).expect("a golden line"))
                .collect();
        assert!(cases.len() > 50);
        for (value, expected) in cases {
            let body = format!(r#"{{"metadata":{{"creationTimestamp":{value}}}}}"#);
            let found = type_error("v1", "Namespace", body.as_bytes());
            // Go's own decoder adds the field to a type error.
            let expected = expected.map(|e| {
                e.replace(
                    "into Go value of type",
                    "into Go struct field ObjectMeta.metadata.creationTimestamp of type",
                )
            });
            assert_eq!(found, expected, "{value}");
        }
    }

    /// The same values read as apimachinery's `MicroTime` reads them (a Lease's
    /// `spec.renewTime`), whose layout requires six digits of a second (Go's answers made with
    /// `go run ./golden microtimes < ../apiserver/tests/data/times.jsonl >
    /// ../apiserver/tests/data/microtimes-cases.jsonl`).
    #[test]
    fn micro_times_are_parsed_as_go_parses_them() {
        let cases: Vec<(serde_json::Value, Option<String>)> =
            include_str!("../tests/data/microtimes-cases.jsonl")
                .lines()
                .map(|line| serde_json::from_str(line).expect("a golden line"))
                .collect();
        assert!(cases.len() > 50);
        let mut accepted = 0;
        for (value, expected) in cases {
            let body = format!(r#"{{"spec":{{"renewTime":{value}}}}}"#);
            let found = type_error("coordination.k8s.io/v1", "Lease", body.as_bytes());
            let expected = expected.map(|e| {
                e.replace(
                    "into Go value of type",
                    "into Go struct field LeaseSpec.spec.renewTime of type",
                )
            });
            accepted += usize::from(expected.is_none());
            assert_eq!(found, expected, "{value}");
        }
        assert!(accepted >= 3, "{accepted}");
    }

    /// Where Go's `base64.StdEncoding.Decode` finds each input corrupt (its answers, go 1.26),
    /// and the error a Secret's `data` gets from Go's decoder.
    #[test]
    fn base64_is_read_as_go_reads_it() {
        for (text, expected) in [
            ("", None),
            ("eA==", None),
            ("eA=", Some(3)),
            ("not base64", Some(3)),
            ("eA", Some(0)),
            ("e", Some(0)),
            ("eA==eA==", Some(4)),
            ("eA==\n", None),
            ("eA=\n=", None),
            ("eA=x", Some(2)),
            ("eAx=", None),
            ("=AAA", Some(0)),
            ("AAAA\nAAAA", None),
            ("AA\r\nAA", None),
            ("AAA=B", Some(4)),
            ("AAA==", Some(4)),
            ("AAAAA", Some(4)),
            ("aGVsbG8gd29ybGQ=", None),
            ("a-b_", Some(1)),
            ("AAAA AAAA", Some(4)),
        ] {
            assert_eq!(base64_error(text.as_bytes()), expected, "{text:?}");
        }
        assert_eq!(
            type_error("v1", "Secret", br#"{"data":{"a":"eA=","b":"!"}}"#).as_deref(),
            Some("illegal base64 data at input byte 3")
        );
    }

    #[test]
    fn decoders_of_their_own_are_followed() {
        let service = |spec: &str| format!(r#"{{"spec":{spec}}}"#);
        for (spec, expected) in [
            (r#"{"ports":[{"targetPort":"http"}]}"#, None),
            (r#"{"ports":[{"targetPort":80}]}"#, None),
            (
                r#"{"ports":[{"targetPort":1.5}]}"#,
                Some(
                    "json: cannot unmarshal number 1.5 into Go struct field ServicePort.spec.ports.targetPort of type int32",
                ),
            ),
            (
                r#"{"ports":[{"port":"80"}]}"#,
                Some(
                    "json: cannot unmarshal string into Go struct field ServicePort.spec.ports.port of type int32",
                ),
            ),
        ] {
            assert_eq!(
                type_error("v1", "Service", service(spec).as_bytes()).as_deref(),
                expected,
                "{spec}"
            );
        }
        assert_eq!(
            type_error("v1", "Service", br#"{"metadata":{"creationTimestamp":5}}"#).as_deref(),
            Some(
                "json: cannot unmarshal number into Go struct field ObjectMeta.metadata.creationTimestamp of type string"
            )
        );
    }

    /// What kube-apiserver 1.37 answered for strategic merge patches of a
    /// PriorityLevelConfiguration (the differential suite's
    /// `a_patch_whose_result_does_not_decode_is_invalid`).
    #[test]
    fn the_unstructured_converter_is_held_to_its_words() {
        use super::{convert_unstructured, go_plus_v};
        use serde_json::json;
        let level = |spec: serde_json::Value, metadata: serde_json::Value| {
            json!({"apiVersion": LEVELS, "kind": "PriorityLevelConfiguration",
                "metadata": metadata, "spec": spec})
        };
        let limited = |shares: serde_json::Value| {
            json!({"type": "Limited", "limited": {"nominalConcurrencyShares": shares,
                "limitResponse": {"type": "Reject"}}})
        };
        let convert = |mut object: serde_json::Value| {
            convert_unstructured(LEVELS, "PriorityLevelConfiguration", &mut object).map(|()| object)
        };
        for (object, expected) in [
            (
                level(limited(json!("high")), json!({})),
                "unrecognized type: int32",
            ),
            (
                level(limited(json!(1.5)), json!({})),
                "cannot convert float64 to int32",
            ),
            (
                level(json!("text"), json!({})),
                "cannot restore struct from: string",
            ),
            (
                level(json!({"type": 1}), json!({})),
                "cannot convert int64 to v1.PriorityLevelEnablement",
            ),
            (
                level(limited(json!(5)), json!({"labels": {"a": 1}})),
                "cannot convert int64 to string",
            ),
            (
                level(limited(json!(5)), json!({"labels": {"a": true}})),
                "unrecognized type: string",
            ),
            (
                level(limited(json!(5)), json!({"labels": "x"})),
                "cannot restore map from string",
            ),
            (
                level(limited(json!(5)), json!({"finalizers": "f"})),
                "cannot restore slice from string",
            ),
        ] {
            assert_eq!(
                convert(object.clone()).err().as_deref(),
                Some(expected),
                "{object}"
            );
        }
        // A whole float into an integer is that integer; times, nulls and unknown fields pass.
        let converted = convert(level(
            limited(json!(6.0)),
            json!({"creationTimestamp": "x", "generation": null, "unknown": [1]}),
        ))
        .unwrap();
        assert_eq!(
            converted["spec"]["limited"]["nominalConcurrencyShares"],
            json!(6)
        );
        assert!(converted["spec"]["limited"]["nominalConcurrencyShares"].is_i64());
        // Not one of kube's kinds: nothing.
        assert_eq!(
            convert_unstructured("example.com/v1", "Widget", &mut json!({"spec": 1})),
            Ok(())
        );
        assert_eq!(
            go_plus_v(&json!({"spec": {"b": [1, "x", null], "a": 1.5, "c": true}})),
            "map[spec:map[a:1.5 b:[1 x <nil>] c:true]]"
        );
    }
}
