//! Tables the kernel lays out itself (`:help`, `:vars`).

use crate::engine::CommandTable;
use jupyter_protocol::{Media, MediaType};

/// A table the kernel lays out itself (`:help`, `:vars`): aligned text, and HTML whose cells are
/// left-aligned inline (JupyterLab's default style right-aligns table cells, which makes a column
/// of names and sentences hard to read).
pub(crate) fn table_media(table: &CommandTable) -> Media {
    let widths: Vec<usize> = (0..table.header.len())
        .map(|column| {
            std::iter::once(&table.header)
                .chain(&table.rows)
                .filter_map(|row| row.get(column))
                .map(|cell| cell.chars().count())
                .max()
                .unwrap_or(0)
        })
        .collect();
    let text_row = |row: &Vec<String>| {
        let cells: Vec<String> = row
            .iter()
            .zip(&widths)
            .map(|(cell, width)| format!("{cell:<width$}"))
            .collect();
        cells.join("  ").trim_end().to_owned()
    };
    let mut text = text_row(&table.header);
    for row in &table.rows {
        text.push('\n');
        text.push_str(&text_row(row));
    }
    let html_row = |tag: &str, row: &Vec<String>| {
        let cells: String = row
            .iter()
            .map(|cell| {
                format!(
                    "<{tag} style=\"text-align: left; vertical-align: top\">{}</{tag}>",
                    escape_html(cell)
                )
            })
            .collect();
        format!("<tr>{cells}</tr>")
    };
    let body: String = table.rows.iter().map(|row| html_row("td", row)).collect();
    let mut html = format!(
        "<table><thead>{}</thead><tbody>{body}</tbody></table>",
        html_row("th", &table.header)
    );
    if let Some(note) = &table.note {
        text.push_str("\n\n");
        text.push_str(note);
        html.push_str(&format!("<p>{}</p>", escape_html(note)));
    }
    Media::new(vec![MediaType::Plain(text), MediaType::Html(html)])
}

fn escape_html(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tables_are_left_aligned_with_their_note_below() {
        let table = CommandTable {
            header: vec!["Variable".into(), "Type".into()],
            rows: vec![vec!["v".into(), "Vec<i32>".into()]],
            note: Some("a <note>".into()),
        };
        let media = serde_json::to_value(table_media(&table)).unwrap();
        let html = media["text/html"].as_str().unwrap();
        assert_eq!(html.matches("text-align: left").count(), 4, "{html}");
        assert!(html.contains("Vec&lt;i32&gt;") && html.ends_with("<p>a &lt;note&gt;</p>"));
        let text = media["text/plain"].as_str().unwrap();
        assert_eq!(text, "Variable  Type\nv         Vec<i32>\n\na <note>");
    }
}
