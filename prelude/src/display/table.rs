//! Tables as HTML and as fixed-width text, for the values that render as one.

use crate::sys::escape_html as esc;

/// Builds an HTML table; cells are escaped.
pub(crate) fn html_table(caption: Option<&str>, header: &[String], rows: &[Vec<String>]) -> String {
    let mut h = String::from("<table class=\"tchbook\">");
    if let Some(c) = caption {
        h.push_str(&format!(
            "<caption style=\"text-align:left\">{}</caption>",
            esc(c)
        ));
    }
    h.push_str("<thead><tr>");
    for c in header {
        h.push_str(&format!("<th>{}</th>", esc(c)));
    }
    h.push_str("</tr></thead><tbody>");
    for row in rows {
        h.push_str("<tr>");
        for c in row {
            h.push_str(&format!("<td>{}</td>", esc(c)));
        }
        h.push_str("</tr>");
    }
    h.push_str("</tbody></table>");
    h
}

/// Builds a fixed-width text table with a header rule.
pub(crate) fn text_table(header: &[String], rows: &[Vec<String>]) -> String {
    let cols = header.len();
    let mut widths: Vec<usize> = header.iter().map(|h| h.chars().count()).collect();
    for row in rows {
        for (i, c) in row.iter().enumerate().take(cols) {
            widths[i] = widths[i].max(c.chars().count());
        }
    }
    let line = |cells: &[String]| {
        cells
            .iter()
            .enumerate()
            .map(|(i, c)| format!("{c:>w$}", w = widths[i]))
            .collect::<Vec<_>>()
            .join("  ")
    };
    let mut out = line(header);
    out.push('\n');
    out.push_str(
        &widths
            .iter()
            .map(|w| "-".repeat(*w))
            .collect::<Vec<_>>()
            .join("  "),
    );
    for row in rows {
        out.push('\n');
        out.push_str(&line(row));
    }
    out
}
