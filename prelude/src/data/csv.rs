//! CSV tables (pandas' `read_csv` for numeric data) and the shipped Iris data set.

use super::error::{DataError, format_error, io_error};
use crate::display::{Bundle, Render, html_table, rich, text_table};
use std::path::{Path, PathBuf};
use tch::{Kind, Tensor};

/// The real Iris data set (Fisher, 1936; 150 rows, scikit-learn's `load_iris` values), shipped
/// with the prelude, as the course's `iris.csv`: four measurements in cm and `target` 0/1/2.
///
/// ```
/// assert_eq!(tchbook_prelude::data::IRIS_CSV.lines().count(), 151);
/// ```
pub const IRIS_CSV: &str = include_str!("../../data/iris.csv");

/// A table of numbers read from a CSV file with a header row. Columns that are not numbers
/// (e.g. species names) are coded 0, 1, 2, … in order of first appearance.
///
/// ```
/// use tchbook_prelude::prelude::*;
/// let df = iris();
/// let x = df.drop(&["target"]).values();     // df.drop('target', axis=1).values
/// let y = df.column("target");                 // df['target'].values
/// assert_eq!(x.size(), [150, 4]);
/// assert_eq!(y.size(), [150]);
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct CsvTable {
    columns: Vec<String>,
    rows: Vec<Vec<f64>>,
    categories: Vec<Option<Vec<String>>>,
    source: String,
}

/// The fallible twin of [`read_csv`].
///
/// ```no_run
/// let df = tchbook_prelude::data::f_read_csv("iris.csv");
/// if let Err(e) = df { println!("{e}"); }
/// ```
pub fn f_read_csv(path: impl AsRef<Path>) -> Result<CsvTable, DataError> {
    let path = path.as_ref();
    let text = std::fs::read_to_string(path).map_err(|e| io_error(path, e))?;
    parse(&text, path)
}

/// pandas' `pd.read_csv(path)` for a numeric CSV with a header row. Panics naming the file,
/// the line and the problem (see [`f_read_csv`]).
///
/// ```no_run
/// use tchbook_prelude::prelude::*;
/// let df = read_csv("../Data/iris.csv");
/// # let _ = df;
/// ```
pub fn read_csv(path: impl AsRef<Path>) -> CsvTable {
    f_read_csv(path).unwrap_or_else(|e| panic!("{e}"))
}

fn parse(text: &str, path: &Path) -> Result<CsvTable, DataError> {
    let mut lines = text
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty());
    let (_, header) = lines
        .next()
        .ok_or_else(|| format_error(path, "empty CSV file, expected a header row"))?;
    let columns: Vec<String> = header
        .split(',')
        .map(|c| c.trim().trim_matches('"').to_string())
        .collect();
    let mut raw: Vec<Vec<String>> = Vec::new();
    for (i, line) in lines {
        let cells: Vec<String> = line
            .split(',')
            .map(|c| c.trim().trim_matches('"').to_string())
            .collect();
        if cells.len() != columns.len() {
            return Err(format_error(
                path,
                format!(
                    "line {}: {} fields, the header has {}",
                    i + 1,
                    cells.len(),
                    columns.len()
                ),
            ));
        }
        raw.push(cells);
    }
    let mut categories: Vec<Option<Vec<String>>> = vec![None; columns.len()];
    for (c, cat) in categories.iter_mut().enumerate() {
        if raw.iter().any(|r| r[c].parse::<f64>().is_err()) {
            let mut names: Vec<String> = Vec::new();
            for r in &raw {
                if !names.contains(&r[c]) {
                    names.push(r[c].clone());
                }
            }
            *cat = Some(names);
        }
    }
    let rows = raw
        .iter()
        .map(|r| {
            r.iter()
                .enumerate()
                .map(|(c, v)| match &categories[c] {
                    Some(names) => names.iter().position(|n| n == v).unwrap_or(0) as f64,
                    None => v.parse::<f64>().unwrap_or(f64::NAN),
                })
                .collect()
        })
        .collect();
    Ok(CsvTable {
        columns,
        rows,
        categories,
        source: path.display().to_string(),
    })
}

impl CsvTable {
    /// Column names, in order.
    ///
    /// ```
    /// let df = tchbook_prelude::data::iris();
    /// assert_eq!(df.columns().len(), 5);
    /// ```
    pub fn columns(&self) -> &[String] {
        &self.columns
    }

    /// Number of rows (`len(df)`).
    ///
    /// ```
    /// let df = tchbook_prelude::data::iris();
    /// assert_eq!(df.len(), 150);
    /// ```
    pub fn len(&self) -> usize {
        self.rows.len()
    }

    /// Whether there are no rows.
    ///
    /// ```
    /// let df = tchbook_prelude::data::iris();
    /// assert!(!df.is_empty());
    /// ```
    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }

    fn f_index(&self, name: &str) -> Result<usize, DataError> {
        self.columns.iter().position(|c| c == name).ok_or_else(|| {
            DataError::Invalid(format!(
                "{}: no column {name:?}; the columns are {:?}",
                self.source, self.columns
            ))
        })
    }

    fn index(&self, name: &str) -> usize {
        self.f_index(name).unwrap_or_else(|e| panic!("{e}"))
    }

    /// The fallible twin of [`column`](Self::column).
    ///
    /// ```
    /// let df = tchbook_prelude::data::iris();
    /// assert!(df.f_column("species").unwrap_err().to_string().contains("no column"));
    /// ```
    pub fn f_column(&self, name: &str) -> Result<Tensor, DataError> {
        let c = self.f_index(name)?;
        Ok(Tensor::from_slice(
            &self.rows.iter().map(|r| r[c]).collect::<Vec<f64>>(),
        ))
    }

    /// The fallible twin of [`drop`](Self::drop).
    ///
    /// ```
    /// let df = tchbook_prelude::data::iris();
    /// assert!(df.f_drop(&["label"]).is_err());
    /// ```
    pub fn f_drop(&self, names: &[&str]) -> Result<CsvTable, DataError> {
        for n in names {
            self.f_index(n)?;
        }
        Ok(self.drop(names))
    }

    /// `df[name].values` as a float64 tensor `[rows]` (panics naming the columns if absent).
    ///
    /// ```
    /// let df = tchbook_prelude::data::iris();
    /// assert_eq!(df.column("target").size(), [150]);
    /// ```
    pub fn column(&self, name: &str) -> Tensor {
        let c = self.index(name);
        Tensor::from_slice(&self.rows.iter().map(|r| r[c]).collect::<Vec<f64>>())
    }

    /// A table without the named columns (`df.drop(names, axis=1)`).
    ///
    /// ```
    /// let df = tchbook_prelude::data::iris();
    /// assert_eq!(df.drop(&["target"]).columns().len(), 4);
    /// ```
    pub fn drop(&self, names: &[&str]) -> CsvTable {
        let keep: Vec<usize> = (0..self.columns.len())
            .filter(|&c| !names.contains(&self.columns[c].as_str()))
            .collect();
        for n in names {
            self.index(n);
        }
        CsvTable {
            columns: keep.iter().map(|&c| self.columns[c].clone()).collect(),
            rows: self
                .rows
                .iter()
                .map(|r| keep.iter().map(|&c| r[c]).collect())
                .collect(),
            categories: keep.iter().map(|&c| self.categories[c].clone()).collect(),
            source: self.source.clone(),
        }
    }

    /// `df.values` as a float64 tensor `[rows, columns]`.
    ///
    /// ```
    /// let df = tchbook_prelude::data::iris();
    /// assert_eq!(df.values().size(), [150, 5]);
    /// ```
    pub fn values(&self) -> Tensor {
        let flat: Vec<f64> = self.rows.iter().flatten().copied().collect();
        Tensor::from_slice(&flat).view([self.rows.len() as i64, self.columns.len() as i64])
    }

    /// The names behind a coded text column (e.g. species), if it was text.
    ///
    /// ```
    /// let df = tchbook_prelude::data::iris();
    /// assert!(df.categories("target").is_none()); // numbers, not text
    /// ```
    pub fn categories(&self, name: &str) -> Option<&[String]> {
        self.categories[self.index(name)].as_deref()
    }

    /// `df.head(n)`: the first `n` rows.
    ///
    /// ```
    /// let df = tchbook_prelude::data::iris();
    /// assert_eq!(df.head(5).len(), 5);
    /// ```
    pub fn head(&self, n: usize) -> CsvTable {
        let mut t = self.clone();
        t.rows.truncate(n);
        t
    }
}

fn fmt_cell(v: f64) -> String {
    if v.fract() == 0.0 && v.abs() < 1e15 {
        format!("{v:.1}")
    } else {
        format!("{v}")
    }
}

impl Render for CsvTable {
    fn bundle(&self) -> Bundle {
        let shown = 10.min(self.rows.len());
        let mut header = vec![String::new()];
        header.extend(self.columns.iter().cloned());
        let rows: Vec<Vec<String>> = self.rows[..shown]
            .iter()
            .enumerate()
            .map(|(i, r)| {
                std::iter::once(i.to_string())
                    .chain(r.iter().map(|&v| fmt_cell(v)))
                    .collect()
            })
            .collect();
        let caption = format!(
            "{} rows × {} columns ({})",
            self.rows.len(),
            self.columns.len(),
            self.source
        );
        Bundle::text(format!("{}\n{caption}", text_table(&header, &rows))).with_html(html_table(
            Some(&caption),
            &header,
            &rows,
        ))
    }
}

rich!(CsvTable);

/// The shipped Iris table (see [`IRIS_CSV`]).
///
/// ```
/// assert_eq!(tchbook_prelude::data::iris().len(), 150);
/// ```
pub fn iris() -> CsvTable {
    parse(IRIS_CSV, Path::new("iris.csv (shipped with tchbook)")).unwrap_or_else(|e| panic!("{e}"))
}

/// Writes the shipped `iris.csv` into `dir` (so a notebook can `read_csv` it as the tutorial
/// does) and returns its path.
///
/// ```
/// let dir = std::env::temp_dir().join(format!("iris-doc-{}", std::process::id()));
/// let path = tchbook_prelude::data::write_iris(&dir).unwrap();
/// assert_eq!(tchbook_prelude::data::read_csv(&path).len(), 150);
/// # std::fs::remove_dir_all(&dir).unwrap();
/// ```
pub fn write_iris(dir: impl AsRef<Path>) -> Result<PathBuf, DataError> {
    let dir = dir.as_ref();
    std::fs::create_dir_all(dir).map_err(|e| io_error(dir, e))?;
    let path = dir.join("iris.csv");
    std::fs::write(&path, IRIS_CSV).map_err(|e| io_error(&path, e))?;
    Ok(path)
}

/// scikit-learn's `load_iris()`: `data` `[150, 4]` float32, `target` `[150]` int64, and the names.
///
/// ```
/// use tchbook_prelude::prelude::*;
/// let iris = load_iris().unwrap();
/// assert_eq!(iris.feature_names[0], "sepal length (cm)");
/// ```
#[derive(Debug)]
pub struct Bunch {
    /// Features, float32.
    pub data: Tensor,
    /// Class indices, int64.
    pub target: Tensor,
    /// Column names of `data`.
    pub feature_names: Vec<String>,
    /// Class names, in label order.
    pub target_names: Vec<String>,
}

/// scikit-learn's `load_iris()` from the shipped, real data.
///
/// ```
/// use tchbook_prelude::prelude::*;
/// let iris = load_iris().unwrap();
/// assert_eq!(iris.data.size(), [150, 4]);
/// assert_eq!(iris.target_names, ["setosa", "versicolor", "virginica"]);
/// ```
pub fn load_iris() -> Result<Bunch, DataError> {
    let df = iris();
    let features = df.drop(&["target"]);
    Ok(Bunch {
        data: features.values().to_kind(Kind::Float),
        target: df.column("target").to_kind(Kind::Int64),
        feature_names: features.columns().to_vec(),
        target_names: ["setosa", "versicolor", "virginica"]
            .map(String::from)
            .to_vec(),
    })
}
