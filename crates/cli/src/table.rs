//! The one table format of every listing (`pronto ls`, `pronto ports`,
//! `pronto ports threads`, `pronto switch ports`, `pronto tenant ls`):
//! a header row, each column padded to its widest cell, two spaces
//! between columns, numbers aligned right, no trailing blanks.

/// How a column's cells are aligned.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Align {
    /// Text.
    Left,
    /// Numbers.
    Right,
}

/// A table being filled row by row.
#[derive(Debug)]
pub struct Table {
    align: Vec<Align>,
    rows: Vec<Vec<String>>,
}

impl Table {
    /// A table with these column headers and alignments.
    pub fn new(columns: &[(&str, Align)]) -> Self {
        Self {
            align: columns.iter().map(|c| c.1).collect(),
            rows: vec![columns.iter().map(|c| c.0.to_string()).collect()],
        }
    }

    /// Adds a row (missing cells are empty; extra cells are ignored).
    pub fn row<S: Into<String>>(&mut self, cells: impl IntoIterator<Item = S>) {
        let mut r: Vec<String> = cells
            .into_iter()
            .map(Into::into)
            .take(self.align.len())
            .collect();
        r.resize(self.align.len(), String::new());
        self.rows.push(r);
    }

    /// The rendered table, one line per row, each ending in `\n`.
    pub fn render(&self) -> String {
        let n = self.align.len();
        let width: Vec<usize> = (0..n)
            .map(|c| {
                self.rows
                    .iter()
                    .map(|r| r[c].chars().count())
                    .max()
                    .unwrap_or(0)
            })
            .collect();
        let mut s = String::new();
        for r in &self.rows {
            let mut line = String::new();
            for (c, cell) in r.iter().enumerate() {
                if c > 0 {
                    line.push_str("  ");
                }
                let pad = width[c] - cell.chars().count();
                match self.align[c] {
                    Align::Right => {
                        line.extend(std::iter::repeat_n(' ', pad));
                        line.push_str(cell);
                    }
                    Align::Left => {
                        line.push_str(cell);
                        line.extend(std::iter::repeat_n(' ', pad));
                    }
                }
            }
            s.push_str(line.trim_end());
            s.push('\n');
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::{Align, Table};

    #[test]
    fn columns_pad_to_the_widest_cell() {
        let mut t = Table::new(&[
            ("PORT", Align::Right),
            ("NAME", Align::Left),
            ("WHY", Align::Left),
        ]);
        t.row(["0", "uplink/eth0", "full=3"]);
        t.row(["12345", "a", ""]);
        assert_eq!(
            t.render(),
            " PORT  NAME         WHY\n    0  uplink/eth0  full=3\n12345  a\n"
        );
    }

    #[test]
    fn a_table_without_rows_is_its_header() {
        let t = Table::new(&[("NAME", Align::Left), ("N", Align::Right)]);
        assert_eq!(t.render(), "NAME  N\n");
    }
}
