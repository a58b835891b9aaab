//! JSON for the race tester's `--json` lines, the observation lines and
//! `--doctor --json` (string literals, written here), and the reader of
//! the JSON files the helper reads (srt's settings, Claude Code's managed
//! settings, `--setup`'s record): serde_json's, which takes what
//! `JSON.parse` takes (RFC 8259) but for an escaped lone surrogate
//! (`"\ud800"`), and refuses nesting deeper than 128.
//!
//! serde_json rather than a reader of our own: measured in the release
//! build, the file is 32 bytes larger (text +8.4 KB, read-only data
//! -8.5 KB, against the 270-line reader it replaced), and a run never
//! executes it (the doctor and `--setup` do).

pub use serde_json::Value;

/// Parses one JSON text (whitespace around it allowed); the error says
/// what was wrong, at which line and column.
pub fn parse(text: &str) -> Result<Value, String> {
    serde_json::from_str(text).map_err(|e| e.to_string())
}

/// A JSON value's type, for messages.
pub fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
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
        // A repeated key keeps its last value, as JSON.parse does.
        assert_eq!(v.get("a").and_then(Value::as_str), Some("last"));
        assert_eq!(
            v.get("s").and_then(Value::as_str),
            Some("x\"\\/\u{e9}\u{1f600}\n")
        );
        assert_eq!(kind(&v["o"]), "an object");
        assert_eq!(kind(&parse("[1, -2.5e3]").unwrap()[1]), "a number");
    }

    #[test]
    fn refuses_what_json_parse_refuses_naming_the_line() {
        for bad in [
            "",
            "{",
            "{\"a\" 1}",
            "[1,]",
            "{\"a\":1,}",
            "01",
            "1.",
            "'a'",
            "{a:1}",
            "[1] x",
            "// c\n{}",
        ] {
            assert!(parse(bad).is_err(), "{bad:?} accepted");
        }
        let e = parse("{\n  \"a\": 1\n  \"b\": 2\n}").unwrap_err();
        assert!(e.contains("line 3 column"), "{e}");
        let deep = "[".repeat(100_000);
        assert!(parse(&deep).is_err());
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
