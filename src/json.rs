//! JSON for the race tester's `--json` lines, the observation lines and
//! `--doctor --json` (string literals), and a reader for the one JSON file
//! the helper reads: srt's settings file, for `--doctor`. The reader takes
//! what `JSON.parse` takes (RFC 8259) and nothing more, so a file the
//! doctor accepts is one srt accepts.

/// A parsed JSON value. Objects keep their members in order; a repeated
/// key keeps its last value, as `JSON.parse` does.
#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    Null,
    Bool(bool),
    Number(f64),
    String(String),
    Array(Vec<Value>),
    Object(Vec<(String, Value)>),
}

impl Value {
    /// The member `key` of an object (its last occurrence).
    pub fn get(&self, key: &str) -> Option<&Value> {
        match self {
            Value::Object(members) => members.iter().rev().find(|(k, _)| k == key).map(|(_, v)| v),
            _ => None,
        }
    }

    pub fn as_str(&self) -> Option<&str> {
        match self {
            Value::String(s) => Some(s),
            _ => None,
        }
    }

    /// The JSON type's name, for messages.
    pub fn kind(&self) -> &'static str {
        match self {
            Value::Null => "null",
            Value::Bool(_) => "a boolean",
            Value::Number(_) => "a number",
            Value::String(_) => "a string",
            Value::Array(_) => "an array",
            Value::Object(_) => "an object",
        }
    }
}

/// Nesting deeper than this is refused (no stack overflow on a hostile
/// file).
const MAX_DEPTH: usize = 128;

/// Parses one JSON text (whitespace around it allowed); the error says
/// what was wrong and at which byte.
pub fn parse(text: &str) -> Result<Value, String> {
    let mut p = Parser {
        b: text.as_bytes(),
        at: 0,
    };
    let v = p.value(0)?;
    p.space();
    if p.at != p.b.len() {
        return Err(p.fail("unexpected text after the value"));
    }
    Ok(v)
}

struct Parser<'a> {
    b: &'a [u8],
    at: usize,
}

impl Parser<'_> {
    fn fail(&self, what: &str) -> String {
        format!("{what} at byte {}", self.at)
    }

    fn space(&mut self) {
        while matches!(self.b.get(self.at), Some(b' ' | b'\t' | b'\n' | b'\r')) {
            self.at += 1;
        }
    }

    fn eat(&mut self, word: &[u8]) -> bool {
        if self.b[self.at..].starts_with(word) {
            self.at += word.len();
            true
        } else {
            false
        }
    }

    fn value(&mut self, depth: usize) -> Result<Value, String> {
        if depth > MAX_DEPTH {
            return Err(self.fail("nested too deep"));
        }
        self.space();
        match self.b.get(self.at) {
            Some(b'{') => {
                self.at += 1;
                let mut members = Vec::new();
                self.space();
                if self.eat(b"}") {
                    return Ok(Value::Object(members));
                }
                loop {
                    self.space();
                    if self.b.get(self.at) != Some(&b'"') {
                        return Err(self.fail("expected a member name"));
                    }
                    let key = self.string()?;
                    self.space();
                    if !self.eat(b":") {
                        return Err(self.fail("expected ':'"));
                    }
                    let v = self.value(depth + 1)?;
                    members.push((key, v));
                    self.space();
                    if self.eat(b"}") {
                        return Ok(Value::Object(members));
                    }
                    if !self.eat(b",") {
                        return Err(self.fail("expected ',' or '}'"));
                    }
                }
            }
            Some(b'[') => {
                self.at += 1;
                let mut items = Vec::new();
                self.space();
                if self.eat(b"]") {
                    return Ok(Value::Array(items));
                }
                loop {
                    items.push(self.value(depth + 1)?);
                    self.space();
                    if self.eat(b"]") {
                        return Ok(Value::Array(items));
                    }
                    if !self.eat(b",") {
                        return Err(self.fail("expected ',' or ']'"));
                    }
                }
            }
            Some(b'"') => self.string().map(Value::String),
            Some(b't') if self.eat(b"true") => Ok(Value::Bool(true)),
            Some(b'f') if self.eat(b"false") => Ok(Value::Bool(false)),
            Some(b'n') if self.eat(b"null") => Ok(Value::Null),
            Some(b'-' | b'0'..=b'9') => self.number(),
            Some(_) => Err(self.fail("unexpected character")),
            None => Err(self.fail("unexpected end")),
        }
    }

    fn number(&mut self) -> Result<Value, String> {
        let start = self.at;
        let digits = |p: &mut Parser<'_>| {
            let from = p.at;
            while matches!(p.b.get(p.at), Some(b'0'..=b'9')) {
                p.at += 1;
            }
            p.at > from
        };
        self.eat(b"-");
        if self.eat(b"0") {
            if matches!(self.b.get(self.at), Some(b'0'..=b'9')) {
                return Err(self.fail("leading zero in a number"));
            }
        } else if !digits(self) {
            return Err(self.fail("expected a digit"));
        }
        if self.eat(b".") && !digits(self) {
            return Err(self.fail("expected a digit after '.'"));
        }
        if matches!(self.b.get(self.at), Some(b'e' | b'E')) {
            self.at += 1;
            if !self.eat(b"+") {
                self.eat(b"-");
            }
            if !digits(self) {
                return Err(self.fail("expected an exponent"));
            }
        }
        let text = std::str::from_utf8(&self.b[start..self.at]).unwrap_or("");
        text.parse()
            .map(Value::Number)
            .map_err(|_| self.fail("bad number"))
    }

    fn hex4(&mut self) -> Result<u32, String> {
        let digits = self
            .b
            .get(self.at..self.at + 4)
            .ok_or_else(|| self.fail("short \\u escape"))?;
        let text = std::str::from_utf8(digits).map_err(|_| self.fail("bad \\u escape"))?;
        let v = u32::from_str_radix(text, 16).map_err(|_| self.fail("bad \\u escape"))?;
        self.at += 4;
        Ok(v)
    }

    /// A string literal, the opening quote at `self.at`.
    fn string(&mut self) -> Result<String, String> {
        self.at += 1;
        let mut out = String::new();
        loop {
            let start = self.at;
            while !matches!(self.b.get(self.at), None | Some(b'"' | b'\\' | 0..=0x1f)) {
                self.at += 1;
            }
            // The input is a &str, and the run stops at ASCII bytes only.
            out.push_str(std::str::from_utf8(&self.b[start..self.at]).unwrap_or(""));
            match self.b.get(self.at) {
                Some(b'"') => {
                    self.at += 1;
                    return Ok(out);
                }
                Some(b'\\') => {
                    self.at += 1;
                    let c = match self.b.get(self.at) {
                        Some(b'"') => '"',
                        Some(b'\\') => '\\',
                        Some(b'/') => '/',
                        Some(b'b') => '\u{8}',
                        Some(b'f') => '\u{c}',
                        Some(b'n') => '\n',
                        Some(b'r') => '\r',
                        Some(b't') => '\t',
                        Some(b'u') => {
                            self.at += 1;
                            let hi = self.hex4()?;
                            let code = if (0xd800..0xdc00).contains(&hi) && self.eat(b"\\u") {
                                let lo = self.hex4()?;
                                if (0xdc00..0xe000).contains(&lo) {
                                    0x10000 + ((hi - 0xd800) << 10) + (lo - 0xdc00)
                                } else {
                                    0xfffd
                                }
                            } else {
                                hi
                            };
                            // A lone surrogate: JSON.parse keeps it; a Rust
                            // string cannot, so it reads as U+FFFD.
                            out.push(char::from_u32(code).unwrap_or('\u{fffd}'));
                            continue;
                        }
                        _ => return Err(self.fail("bad escape")),
                    };
                    self.at += 1;
                    out.push(c);
                }
                Some(_) => return Err(self.fail("control character in a string")),
                None => return Err(self.fail("unterminated string")),
            }
        }
    }
}

/// A JSON string literal of `bytes` (invalid UTF-8 becomes U+FFFD).
pub fn string(bytes: &[u8]) -> String {
    let text = String::from_utf8_lossy(bytes);
    let mut out = String::with_capacity(text.len() + 2);
    out.push('"');
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 || c == '\u{2028}' || c == '\u{2029}' => {
                out.push_str(&format!("\\u{:04x}", c as u32));
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_what_json_parse_reads() {
        let v = parse(
            r#" {"a": [1, -2.5e3, true, false, null], "s": "x\"\\\/\u00e9\ud83d\ude00\n",
                "o": {}, "a": "last"} "#,
        )
        .unwrap();
        assert_eq!(v.get("a"), Some(&Value::String("last".into())));
        assert_eq!(
            v.get("s").and_then(Value::as_str),
            Some("x\"\\/\u{e9}\u{1f600}\n")
        );
        assert_eq!(v.get("o"), Some(&Value::Object(vec![])));
        match &v {
            Value::Object(m) => assert_eq!(
                m[0].1,
                Value::Array(vec![
                    Value::Number(1.0),
                    Value::Number(-2500.0),
                    Value::Bool(true),
                    Value::Bool(false),
                    Value::Null
                ])
            ),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn refuses_what_json_parse_refuses() {
        for bad in [
            "",
            "{",
            "{\"a\" 1}",
            "[1,]",
            "{\"a\":1,}",
            "01",
            "1.",
            "-",
            "'x'",
            "\"a\nb\"",
            "\"\\x\"",
            "{a: 1}",
            "// c\n{}",
            "[1] 2",
            "tru",
            "\"\\u12\"",
        ] {
            assert!(parse(bad).is_err(), "{bad:?}");
        }
        let deep = "[".repeat(MAX_DEPTH + 2) + &"]".repeat(MAX_DEPTH + 2);
        assert!(parse(&deep).unwrap_err().contains("nested too deep"));
    }

    #[test]
    fn strings_escape_what_json_requires() {
        assert_eq!(string(b"a\"b\\c\nd\x01"), r#""a\"b\\c\nd\u0001""#);
        assert_eq!(string(b"/t\xffx"), "\"/t\u{fffd}x\"");
        assert_eq!(
            string("a\"b\\c\nd\u{1}".as_bytes()),
            "\"a\\\"b\\\\c\\nd\\u0001\""
        );
    }
}
