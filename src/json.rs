//! JSON string literals, for the race tester's `--json` lines and the
//! observation lines.

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
    fn strings_escape_what_json_requires() {
        assert_eq!(string(b"a\"b\\c\nd\x01"), r#""a\"b\\c\nd\u0001""#);
        assert_eq!(string(b"/t\xffx"), "\"/t\u{fffd}x\"");
        assert_eq!(
            string("a\"b\\c\nd\u{1}".as_bytes()),
            "\"a\\\"b\\\\c\\nd\\u0001\""
        );
    }
}
