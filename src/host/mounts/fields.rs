//! A line's space-separated fields, on the stack for the lines a kernel writes.

/// The space-separated fields of a line: on the stack, unless there are more than a kernel's
/// lines have (a mountinfo line with many tags).
pub(super) struct Fields<'l> {
    few: [&'l [u8]; 16],
    n: usize,
    many: Vec<&'l [u8]>,
}

impl<'l> Fields<'l> {
    pub(super) fn of(line: &'l [u8]) -> Self {
        let mut f = Fields {
            few: [&[]; 16],
            n: 0,
            many: Vec::new(),
        };
        // Found with memchr: a mount point or an option list is a long field.
        let mut rest = line;
        while !rest.is_empty() {
            let end = memchr::memchr(b' ', rest).unwrap_or(rest.len());
            let field = &rest[..end];
            rest = rest.get(end + 1..).unwrap_or(&[]);
            if field.is_empty() {
                continue;
            }
            if f.n < f.few.len() {
                f.few[f.n] = field;
                f.n += 1;
            } else {
                if f.many.is_empty() {
                    f.many.extend_from_slice(&f.few);
                }
                f.many.push(field);
            }
        }
        f
    }

    pub(super) fn as_slice(&self) -> &[&'l [u8]] {
        if self.many.is_empty() {
            &self.few[..self.n]
        } else {
            &self.many
        }
    }
}
