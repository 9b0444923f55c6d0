//! apiextensions-apiserver's `TestCostEstimation` cases (`pkg/apiserver/schema/cel/
//! compilation_test.go`), every one by its name: a schema, a rule on it, and the most the rule
//! may cost as kube-apiserver estimates it, once with no bound on the schema's lists, maps and
//! strings (sizes then come from the 3 MiB request limit) and once with one (`maxItems`,
//! `maxProperties`, `maxLength`). apfkit-crd's estimator is held to them
//! (`crd/tests/cost_estimation.rs`), and the reference kube-apiserver to apfkit on the same
//! schemas (the differential suite's `cel_costs`).

use serde_json::{Value, json};

/// One case: its name, the rule, and for each of its two schemas (unbounded, then bounded
/// by `max`) the schema and the cost upstream expects.
pub struct CostCase {
    /// Upstream's name of the case.
    pub name: &'static str,
    /// The rule.
    pub rule: &'static str,
    /// The schema without bounds and its expected cost (upstream's "calc maxLength").
    pub unbounded: (Value, Expect),
    /// The bound of the bounded schema.
    pub max: i64,
    /// The schema with bounds and its expected cost (upstream's "set maxLength").
    pub bounded: (Value, Expect),
}

/// What a case expects of one estimate: a cost (checked when not 0), or over the limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Expect {
    /// This cost (none checked when 0, as upstream checks none).
    Cost(u64),
    /// At least upstream's `costLimit`, 100,000,000.
    OverLimit,
}

/// upstream's `parseRuleType`: a format of a string, or `x-kubernetes-int-or-string`.
fn typed(name: &str) -> Value {
    match name {
        "duration" | "date" | "date-time" => json!({"type": "string", "format": name}),
        "int-or-string" => json!({"x-kubernetes-int-or-string": true}),
        other => json!({"type": other}),
    }
}

fn with(mut schema: Value, key: &str, max: Option<i64>) -> Value {
    if let Some(max) = max {
        schema[key] = json!(max);
    }
    schema
}

fn array_of(item: Value, max: Option<i64>) -> Value {
    with(json!({"type": "array", "items": item}), "maxItems", max)
}

fn map_of(item: Value, max: Option<i64>) -> Value {
    with(
        json!({"type": "object", "additionalProperties": item}),
        "maxProperties",
        max,
    )
}

fn required_object() -> Value {
    json!({"type": "object", "required": ["required"], "properties": {
        "required": {"type": "string"}, "optional": {"type": "string"}}})
}

fn string(max: Option<i64>) -> Value {
    with(json!({"type": "string"}), "maxLength", max)
}

/// The schema of a case, given the bound it sets (`None`: upstream's "calc maxLength").
pub type Generator = Box<dyn Fn(Option<i64>) -> Value + Send + Sync>;

fn gen_array(item: &str) -> Generator {
    let item = typed(item);
    Box::new(move |max| array_of(item.clone(), max))
}

fn gen_array_of_arrays(item: &str) -> Generator {
    let item = json!({"type": "array", "items": {"type": item}});
    Box::new(move |max| array_of(item.clone(), max))
}

fn gen_object_array() -> Generator {
    Box::new(|max| array_of(required_object(), max))
}

fn gen_map_array(item: &str) -> Generator {
    let item = json!({"type": "object", "additionalProperties": {"type": item}});
    Box::new(move |max| array_of(item.clone(), max))
}

fn gen_map(item: &str) -> Generator {
    let item = typed(item);
    Box::new(move |max| map_of(item.clone(), max))
}

fn gen_map_of(item: Value) -> Generator {
    Box::new(move |max| map_of(item.clone(), max))
}

fn gen_string() -> Generator {
    Box::new(string)
}

fn gen_bytes() -> Generator {
    Box::new(|max| {
        with(
            json!({"type": "string", "format": "byte"}),
            "maxLength",
            max,
        )
    })
}

fn gen_enum(values: &'static [&'static str]) -> Generator {
    Box::new(move |max| with(json!({"type": "string", "enum": values}), "maxLength", max))
}

fn gen_nested_spec() -> Generator {
    Box::new(|max| map_of(string(max), max))
}

fn gen_all_max_nested_spec() -> Generator {
    Box::new(|max| {
        let inner = with(required_object(), "maxProperties", max);
        array_of(map_of(inner, max), max)
    })
}

fn gen_one_max_nested_spec() -> Generator {
    Box::new(|max| array_of(map_of(required_object(), max), None))
}

fn gen_join() -> Generator {
    Box::new(|max| array_of(string(max), max))
}

fn gen_replace() -> Generator {
    Box::new(|max| {
        json!({"type": "object", "properties": {
            "str": string(max), "before": string(Some(2)), "after": string(Some(4))}})
    })
}

fn gen_split() -> Generator {
    Box::new(
        |max| json!({"type": "object", "properties": {"str": string(max), "separator": string(max)}}),
    )
}

fn gen_int_or_string() -> Generator {
    Box::new(|max| {
        with(
            json!({"x-kubernetes-int-or-string": true}),
            "maxLength",
            max,
        )
    })
}

/// Every case, in upstream's order.
pub fn cases() -> Vec<CostCase> {
    use Expect::{Cost, OverLimit};
    let table: Vec<(&str, Generator, &str, Expect, i64, Expect)> = vec![
        (
            "number array with all",
            gen_array("number"),
            "self.all(x, true)",
            Cost(4718591),
            10,
            Cost(32),
        ),
        (
            "string array with all",
            gen_array("string"),
            "self.all(x, true)",
            Cost(3145727),
            20,
            Cost(62),
        ),
        (
            "boolean array with all",
            gen_array("boolean"),
            "self.all(x, true)",
            Cost(1887437),
            5,
            Cost(17),
        ),
        (
            "array of number arrays with all",
            gen_array_of_arrays("number"),
            "self.all(x, true)",
            Cost(3145727),
            100,
            Cost(302),
        ),
        (
            "array of objects with all",
            gen_object_array(),
            "self.all(x, true)",
            Cost(555128),
            50,
            Cost(152),
        ),
        (
            "map of numbers with all",
            gen_map("number"),
            "self.all(x, true)",
            Cost(1348169),
            10,
            Cost(32),
        ),
        (
            "map of numbers with has",
            gen_map("number"),
            "has(self.x)",
            Cost(0),
            100,
            Cost(0),
        ),
        (
            "map of strings with all",
            gen_map("string"),
            "self.all(x, true)",
            Cost(1179647),
            3,
            Cost(11),
        ),
        (
            "map of strings with has",
            gen_map("string"),
            "has(self.x)",
            Cost(0),
            550,
            Cost(0),
        ),
        (
            "map of booleans with all",
            gen_map("boolean"),
            "self.all(x, true)",
            Cost(943718),
            100,
            Cost(302),
        ),
        (
            "map of booleans with has",
            gen_map("boolean"),
            "has(self.x)",
            Cost(0),
            1024,
            Cost(0),
        ),
        (
            "string with contains",
            gen_string(),
            "self.contains('test')",
            Cost(314574),
            10,
            Cost(5),
        ),
        (
            "string with startsWith",
            gen_string(),
            "self.startsWith('test')",
            Cost(2),
            15,
            Cost(2),
        ),
        (
            "string with endsWith",
            gen_string(),
            "self.endsWith('test')",
            Cost(2),
            30,
            Cost(2),
        ),
        (
            "concat string",
            gen_string(),
            r#"size(self + "hello") > size("hello")"#,
            Cost(314578),
            4,
            Cost(7),
        ),
        (
            "index of array with numbers",
            gen_array("number"),
            "self[1] == 0.0",
            Cost(2),
            5000,
            Cost(2),
        ),
        (
            "index of array with strings",
            gen_array("string"),
            "self[1] == self[1]",
            Cost(314577),
            8,
            Cost(314577),
        ),
        (
            "O(n^2) loop with numbers",
            gen_array("number"),
            "self.all(x, self.all(y, true))",
            OverLimit,
            10,
            Cost(352),
        ),
        (
            "O(n^3) loop with numbers",
            gen_array("number"),
            "self.all(x, self.all(y, self.all(z, true)))",
            OverLimit,
            10,
            Cost(3552),
        ),
        (
            "regex matches simple",
            gen_string(),
            r#"self.matches("x")"#,
            Cost(314574),
            50,
            Cost(22),
        ),
        (
            "regex matches empty string",
            gen_string(),
            r#""".matches("(((((((((())))))))))[0-9]")"#,
            Cost(7),
            10,
            Cost(7),
        ),
        (
            "regex matches empty regex",
            gen_string(),
            r#"self.matches("")"#,
            Cost(1),
            100,
            Cost(1),
        ),
        (
            "map of strings with value length",
            gen_nested_spec(),
            "self.all(x, x.contains(self[x]))",
            Cost(2752507),
            10,
            Cost(72),
        ),
        (
            "set array maxLength to zero",
            gen_array("number"),
            "self[3] == 0.0",
            Cost(2),
            0,
            Cost(2),
        ),
        (
            "set map maxLength to zero",
            gen_map("number"),
            r#"self["x"] == 0.0"#,
            Cost(2),
            0,
            Cost(2),
        ),
        (
            "set string maxLength to zero",
            gen_string(),
            r#"self == "x""#,
            Cost(2),
            0,
            Cost(1),
        ),
        (
            "set bytes maxLength to zero",
            gen_bytes(),
            r#"self == b"x""#,
            Cost(2),
            0,
            Cost(1),
        ),
        (
            "set maxLength greater than estimated maxLength",
            gen_array("number"),
            "self.all(x, x == 0.0)",
            Cost(6291454),
            3 * 1024 * 2048,
            Cost(25165826),
        ),
        (
            "nested types with root rule with all supporting maxLength",
            gen_all_max_nested_spec(),
            r#"self.all(x, x["y"].required == "z")"#,
            Cost(7340027),
            10,
            Cost(72),
        ),
        (
            "nested types with root rule with one supporting maxLength",
            gen_one_max_nested_spec(),
            r#"self.all(x, x["y"].required == "z")"#,
            Cost(7340027),
            10,
            Cost(7340027),
        ),
        (
            "int-or-string array with all",
            gen_array("int-or-string"),
            "self.all(x, true)",
            Cost(4718591),
            10,
            Cost(32),
        ),
        (
            "index of array with int-or-strings",
            gen_array("int-or-string"),
            "self[0] == 5",
            Cost(3),
            10,
            Cost(3),
        ),
        (
            "index of array with booleans",
            gen_array("boolean"),
            "self[0] == false",
            Cost(2),
            25,
            Cost(2),
        ),
        (
            "index of array of objects",
            gen_object_array(),
            "self[0] == null",
            Cost(2),
            422,
            Cost(2),
        ),
        (
            "index of array of array of numnbers",
            gen_array_of_arrays("number"),
            "self[0][0] == -1.0",
            Cost(3),
            51,
            Cost(3),
        ),
        (
            "array of number maps with all",
            gen_map_array("number"),
            "self.all(x, x.y == 25.2)",
            Cost(6291452),
            12,
            Cost(74),
        ),
        (
            "index of array of number maps",
            gen_map_array("number"),
            "self[0].x > 2.0",
            Cost(4),
            3000,
            Cost(4),
        ),
        (
            "duration array with all",
            gen_array("duration"),
            "self.all(x, true)",
            Cost(2359295),
            5,
            Cost(17),
        ),
        (
            "index of duration array",
            gen_array("duration"),
            "self[0].getHours() == 2",
            Cost(4),
            525,
            Cost(4),
        ),
        (
            "date array with all",
            gen_array("date"),
            "self.all(x, true)",
            Cost(725936),
            15,
            Cost(47),
        ),
        (
            "index of date array",
            gen_array("date"),
            "self[2].getDayOfMonth() == 13",
            Cost(4),
            42,
            Cost(4),
        ),
        (
            "date-time array with all",
            gen_array("date-time"),
            "self.all(x, true)",
            Cost(428963),
            25,
            Cost(77),
        ),
        (
            "index of date-time array",
            gen_array("date-time"),
            "self[2].getMinutes() == 45",
            Cost(4),
            99,
            Cost(4),
        ),
        (
            "map of int-or-strings with all",
            gen_map("int-or-string"),
            "self.all(x, true)",
            Cost(1348169),
            15,
            Cost(47),
        ),
        (
            "map of int-or-strings with has",
            gen_map("int-or-string"),
            "has(self.x)",
            Cost(0),
            5000,
            Cost(0),
        ),
        (
            "map of objects with all",
            gen_map_of(required_object()),
            "self.all(x, true)",
            Cost(428963),
            20,
            Cost(62),
        ),
        (
            "map of objects with has",
            gen_map_of(required_object()),
            "has(self.x)",
            Cost(0),
            9001,
            Cost(0),
        ),
        (
            "map of number maps with all",
            gen_map_of(json!({"type": "object", "additionalProperties": {"type": "number"}})),
            "self.all(x, true)",
            Cost(1179647),
            10,
            Cost(32),
        ),
        (
            "map of number maps with has",
            gen_map_of(json!({"type": "object", "additionalProperties": {"type": "number"}})),
            "has(self.x)",
            Cost(0),
            101,
            Cost(0),
        ),
        (
            "map of number arrays with all",
            gen_map_of(json!({"type": "array", "items": {"type": "number"}})),
            "self.all(x, true)",
            Cost(1179647),
            25,
            Cost(77),
        ),
        (
            "map of number arrays with has",
            gen_map_of(json!({"type": "array", "items": {"type": "number"}})),
            "has(self.x)",
            Cost(0),
            40000,
            Cost(0),
        ),
        (
            "map of durations with all",
            gen_map("duration"),
            "self.all(x, true)",
            Cost(1048577),
            5,
            Cost(17),
        ),
        (
            "map of durations with has",
            gen_map("duration"),
            "has(self.x)",
            Cost(0),
            256,
            Cost(0),
        ),
        (
            "map of dates with all",
            gen_map("date"),
            "self.all(x, true)",
            Cost(524288),
            10,
            Cost(32),
        ),
        (
            "map of dates with has",
            gen_map("date"),
            "has(self.x)",
            Cost(0),
            65536,
            Cost(0),
        ),
        (
            "map of date-times with all",
            gen_map("date-time"),
            "self.all(x, true)",
            Cost(349526),
            25,
            Cost(77),
        ),
        (
            "map of date-times with has",
            gen_map("date-time"),
            "has(self.x)",
            Cost(0),
            490,
            Cost(0),
        ),
        (
            "extended library regex find",
            gen_string(),
            "self.find('[0-9]+') == ''",
            Cost(629147),
            10,
            Cost(11),
        ),
        (
            "extended library join",
            gen_join(),
            "self.join(' ') == 'aa bb'",
            Cost(329853068905),
            10,
            Cost(43),
        ),
        (
            "extended library isSorted",
            gen_join(),
            "self.isSorted() == true",
            Cost(329854432052),
            10,
            Cost(52),
        ),
        (
            "extended library replace",
            gen_replace(),
            "self.str.replace(self.before, self.after) == 'does not matter'",
            Cost(629154),
            4,
            Cost(12),
        ),
        (
            "extended library split",
            gen_split(),
            "self.str.split(self.separator) == []",
            Cost(629160),
            10,
            Cost(22),
        ),
        (
            "extended library lowerAscii",
            gen_string(),
            "self.lowerAscii() == 'lower!'",
            Cost(314575),
            10,
            Cost(6),
        ),
        (
            "check cost of size call",
            gen_map("integer"),
            "oldSelf.size() == self.size()",
            Cost(5),
            10,
            Cost(5),
        ),
        (
            "check cost of timestamp comparison",
            gen_map("date-time"),
            r#"self["a"] == self["b"]"#,
            Cost(8),
            7,
            Cost(8),
        ),
        (
            "check cost of duration comparison",
            gen_map("duration"),
            r#"self["c"] == self["d"]"#,
            Cost(8),
            42,
            Cost(8),
        ),
        (
            "enums with maxLength equals to the longest possible value",
            gen_enum(&["A", "B", "C", "LongValue"]),
            "self.contains('A')",
            Cost(2),
            1000,
            Cost(401),
        ),
        (
            "IntOrString type with quantity rule",
            gen_int_or_string(),
            "isQuantity(self)",
            Cost(314574),
            20,
            Cost(9),
        ),
    ];
    table
        .into_iter()
        .map(|(name, generator, rule, calc, max, set)| CostCase {
            name,
            rule,
            unbounded: (generator(None), calc),
            max,
            bounded: (generator(Some(max)), set),
        })
        .collect()
}
