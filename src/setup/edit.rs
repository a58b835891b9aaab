//! Edits of a settings file's JSON text that keep everything else in it
//! byte for byte: the other keys, their order, the spacing. The text is
//! first read whole by `json::parse` (so it is valid JSON); this scanner
//! then finds the byte spans of an object's members, and an edit replaces
//! one value, inserts one member (indented as the member before it) or
//! removes one.

use crate::json::{self, Value};

/// One member of an object: where its key starts and its value's span.
struct Member {
    key: String,
    start: usize,
    value: (usize, usize),
}

fn skip_ws(t: &[u8], mut i: usize) -> usize {
    while i < t.len() && matches!(t[i], b' ' | b'\t' | b'\n' | b'\r') {
        i += 1;
    }
    i
}

/// The end of the string starting at `i` (its opening quote).
fn string_end(t: &[u8], mut i: usize) -> usize {
    i += 1;
    while i < t.len() {
        match t[i] {
            b'\\' => i += 2,
            b'"' => return i + 1,
            _ => i += 1,
        }
    }
    t.len()
}

/// The end of the value starting at `i`.
fn value_end(t: &[u8], i: usize) -> usize {
    match t.get(i) {
        Some(b'"') => string_end(t, i),
        Some(b'{' | b'[') => {
            let mut depth = 0;
            let mut j = i;
            while j < t.len() {
                match t[j] {
                    b'"' => {
                        j = string_end(t, j);
                        continue;
                    }
                    b'{' | b'[' => depth += 1,
                    b'}' | b']' => {
                        depth -= 1;
                        if depth == 0 {
                            return j + 1;
                        }
                    }
                    _ => {}
                }
                j += 1;
            }
            t.len()
        }
        _ => {
            let mut j = i;
            while j < t.len() && !matches!(t[j], b',' | b'}' | b']' | b' ' | b'\t' | b'\n' | b'\r')
            {
                j += 1;
            }
            j
        }
    }
}

/// The members of the object whose span starts at `open` (its `{`).
fn members(t: &[u8], open: usize) -> Vec<Member> {
    let mut out = Vec::new();
    let mut i = skip_ws(t, open + 1);
    while i < t.len() && t[i] == b'"' {
        let key_end = string_end(t, i);
        let key = match std::str::from_utf8(&t[i..key_end]).ok().map(json::parse) {
            Some(Ok(Value::String(k))) => k,
            _ => String::new(),
        };
        let colon = skip_ws(t, key_end);
        let v = skip_ws(t, colon + 1);
        let end = value_end(t, v);
        out.push(Member {
            key,
            start: i,
            value: (v, end),
        });
        i = skip_ws(t, end);
        if t.get(i) == Some(&b',') {
            i = skip_ws(t, i + 1);
        }
    }
    out
}

/// The span of the top-level value.
fn top(t: &[u8]) -> (usize, usize) {
    let s = skip_ws(t, 0);
    (s, value_end(t, s))
}

/// The text at `path` (a chain of object keys), if every step is there.
pub fn get(text: &str, path: &[&str]) -> Option<String> {
    let t = text.as_bytes();
    let mut span = top(t);
    for key in path {
        if t.get(span.0) != Some(&b'{') {
            return None;
        }
        span = members(t, span.0)
            .into_iter()
            .rev()
            .find(|m| m.key == *key)?
            .value;
    }
    Some(text[span.0..span.1].to_string())
}

/// `{"k": {"k2": value}}` for the rest of a path.
fn nested(path: &[&str], value: &str) -> String {
    match path {
        [] => value.to_string(),
        [k, rest @ ..] => format!(
            "{{{}: {}}}",
            json::string(k.as_bytes()),
            nested(rest, value)
        ),
    }
}

/// What one [`set`] did: the path it wrote (shorter than asked where it
/// made the objects on the way), the text there before, and after.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Change {
    pub path: Vec<String>,
    pub before: Option<String>,
    pub after: String,
}

/// `text` with `value` (JSON text) at `path`, and what changed; `Ok(None)`
/// when it is there already. Err: a step on the way is not an object.
pub fn set(text: &str, path: &[&str], value: &str) -> Result<Option<(String, Change)>, String> {
    let t = text.as_bytes();
    let mut span = top(t);
    for (n, key) in path.iter().enumerate() {
        if t.get(span.0) != Some(&b'{') {
            return Err(format!("{} is not a JSON object", path[..n].join(".")));
        }
        let found = members(t, span.0);
        // The last of a repeated key: the one `JSON.parse` keeps.
        match found.iter().rev().find(|m| m.key == *key) {
            Some(m) if n + 1 < path.len() => span = m.value,
            Some(m) => {
                let old = &text[m.value.0..m.value.1];
                if old == value {
                    return Ok(None);
                }
                let new = format!("{}{value}{}", &text[..m.value.0], &text[m.value.1..]);
                let change = Change {
                    path: path.iter().map(|s| s.to_string()).collect(),
                    before: Some(old.to_string()),
                    after: value.to_string(),
                };
                return Ok(Some((new, change)));
            }
            None => {
                let member_value = nested(&path[n + 1..], value);
                let member = format!("{}: {member_value}", json::string(key.as_bytes()));
                let new = insert(text, span, &found, &member);
                let change = Change {
                    path: path[..=n].iter().map(|s| s.to_string()).collect(),
                    before: None,
                    after: member_value,
                };
                return Ok(Some((new, change)));
            }
        }
    }
    Err("an empty path".into())
}

/// `member` put last into the object at `span` (members `found`), spaced
/// as the last member is.
fn insert(text: &str, span: (usize, usize), found: &[Member], member: &str) -> String {
    let t = text.as_bytes();
    match found.last() {
        None => {
            // `{}` or `{ ... }` of spaces: the member inside, spaced as
            // the braces are.
            let close = span.1 - 1;
            let inner = &text[span.0 + 1..close];
            if inner.contains('\n') {
                let indent = inner.rsplit('\n').next().unwrap_or("");
                format!(
                    "{}\n{indent}  {member}\n{indent}{}",
                    &text[..span.0 + 1],
                    &text[close..]
                )
            } else {
                format!("{}{member}{}", &text[..span.0 + 1], &text[close..])
            }
        }
        Some(last) => {
            // The space before the last member, after its `,` or the `{`.
            let mut sep = last.start;
            while sep > span.0 && !matches!(t[sep - 1], b',' | b'{') {
                sep -= 1;
            }
            // After a `{` with nothing between it and the key: one space,
            // as after a comma in `{"a": 1, "b": 2}`.
            let space = match &text[sep..last.start] {
                "" if t[sep - 1] == b'{' => " ",
                space => space,
            };
            format!(
                "{},{space}{member}{}",
                &text[..last.value.1],
                &text[last.value.1..]
            )
        }
    }
}

/// `text` without the member at `path` (None: it is not there).
pub fn remove(text: &str, path: &[&str]) -> Option<String> {
    let t = text.as_bytes();
    let (last, on_way) = path.split_last()?;
    let mut span = top(t);
    for key in on_way {
        span = members(t, span.0)
            .into_iter()
            .rev()
            .find(|m| m.key == *key)?
            .value;
    }
    if t.get(span.0) != Some(&b'{') {
        return None;
    }
    let found = members(t, span.0);
    let i = found.iter().rposition(|m| m.key == *last)?;
    let (from, to) = if i > 0 {
        // From the end of the member before it (its comma with it).
        (found[i - 1].value.1, found[i].value.1)
    } else if let Some(next) = found.get(1) {
        (found[0].start, next.start)
    } else {
        (found[0].start, found[0].value.1)
    };
    Some(format!("{}{}", &text[..from], &text[to..]))
}

#[cfg(test)]
mod tests {
    use super::*;

    const PRETTY: &str = "{\n    \"zeta\": 1,\n    \"filesystem\": {\"allowWrite\": [\".\"]},\n    \"odd\"  :   [ 1 , 2 ]\n}\n";

    #[test]
    fn a_new_member_goes_last_spaced_as_the_one_before() {
        let (text, change) = set(PRETTY, &["seccomp", "applyPath"], "\"/b\"")
            .unwrap()
            .unwrap();
        assert_eq!(
            text,
            "{\n    \"zeta\": 1,\n    \"filesystem\": {\"allowWrite\": [\".\"]},\n    \"odd\"  :   [ 1 , 2 ],\n    \"seccomp\": {\"applyPath\": \"/b\"}\n}\n"
        );
        assert_eq!(change.path, ["seccomp"]);
        assert_eq!(change.before, None);
        assert!(json::parse(&text).is_ok());
        assert_eq!(remove(&text, &["seccomp"]).unwrap(), PRETTY);
        // Set again: nothing to do.
        assert_eq!(
            set(&text, &["seccomp", "applyPath"], "\"/b\"").unwrap(),
            None
        );
    }

    #[test]
    fn a_value_there_is_replaced_in_place() {
        let text = "{\"seccomp\":{\"applyPath\":\"/old\",\"x\":true}}";
        let (new, change) = set(text, &["seccomp", "applyPath"], "\"/new\"")
            .unwrap()
            .unwrap();
        assert_eq!(new, "{\"seccomp\":{\"applyPath\":\"/new\",\"x\":true}}");
        assert_eq!(change.before.as_deref(), Some("\"/old\""));
        assert_eq!(get(&new, &["seccomp", "x"]).as_deref(), Some("true"));
    }

    #[test]
    fn empty_objects_and_first_members() {
        let (new, _) = set("{}", &["bwrapPath"], "\"/l\"").unwrap().unwrap();
        assert_eq!(new, "{\"bwrapPath\": \"/l\"}");
        assert_eq!(remove(&new, &["bwrapPath"]).unwrap(), "{}");
        let two = "{\"a\": 1, \"b\": 2}";
        assert_eq!(remove(two, &["a"]).unwrap(), "{\"b\": 2}");
        assert_eq!(remove(two, &["b"]).unwrap(), "{\"a\": 1}");
        assert!(set("{\"seccomp\": 3}", &["seccomp", "applyPath"], "1").is_err());
        assert!(set("[1]", &["a"], "1").is_err());
    }
}
