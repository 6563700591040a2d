//! The results of a run grid as a table (text, HTML, CSV, JSON) and the per-device comparison.

use super::runs::Run;
use crate::display::{Bundle, Render, html_table, rich, text_table};
use serde_json::{Value, json};
use std::path::Path;

/// One row of the results table: a run's epoch.
///
/// ```
/// use tchbook_prelude::prelude::*;
/// let m = RunManager::new();
/// for r in m.results() {
///     println!("run {} epoch {}: loss {:.3} accuracy {:.3}", r.run, r.epoch, r.loss, r.accuracy);
/// }
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct EpochResult {
    /// Run number.
    pub run: usize,
    /// Epoch number within the run (1-based).
    pub epoch: usize,
    /// Mean loss per sample.
    pub loss: f64,
    /// Fraction correct.
    pub accuracy: f64,
    /// Seconds this epoch took.
    pub epoch_duration: f64,
    /// Seconds since the run began.
    pub run_duration: f64,
    /// The run's parameters.
    pub params: Run,
}

const COLUMNS: [&str; 10] = [
    "run",
    "epoch",
    "loss",
    "accuracy",
    "epoch_duration",
    "run_duration",
    "lr",
    "batch_size",
    "num_workers",
    "device",
];

pub(crate) fn row_text(r: &EpochResult) -> Vec<String> {
    vec![
        r.run.to_string(),
        r.epoch.to_string(),
        format!("{:.4}", r.loss),
        format!("{:.4}", r.accuracy),
        format!("{:.2}", r.epoch_duration),
        format!("{:.2}", r.run_duration),
        r.params.lr.to_string(),
        r.params.batch_size.to_string(),
        r.params.num_workers.to_string(),
        crate::display::device_name(r.params.device),
    ]
}

fn row_json(r: &EpochResult) -> Value {
    json!({
        "run": r.run, "epoch": r.epoch, "loss": r.loss, "accuracy": r.accuracy,
        "epoch_duration": r.epoch_duration, "run_duration": r.run_duration,
        "lr": r.params.lr, "batch_size": r.params.batch_size, "num_workers": r.params.num_workers,
        "device": crate::display::device_name(r.params.device),
    })
}

/// The run results as a table (pandas' `DataFrame.from_dict(run_data, orient='columns')`).
///
/// ```
/// use tchbook_prelude::prelude::*;
/// let mut m = RunManager::new();
/// let table = m.table();
/// assert!(table.results.is_empty());
/// # let _ = &mut m;
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct RunTable {
    /// The rows.
    pub results: Vec<EpochResult>,
}

impl RunTable {
    /// The table as CSV text.
    ///
    /// ```
    /// use tchbook_prelude::prelude::*;
    /// let mut m = RunManager::new();
    /// assert!(m.table().to_csv().starts_with("run,epoch,loss"));
    /// # let _ = &mut m;
    /// ```
    pub fn to_csv(&self) -> String {
        let mut s = COLUMNS.join(",");
        s.push('\n');
        for r in &self.results {
            let row = row_json(r);
            let cells: Vec<String> = COLUMNS
                .iter()
                .map(|c| match &row[*c] {
                    Value::String(v) => v.clone(),
                    v => v.to_string(),
                })
                .collect();
            s.push_str(&cells.join(","));
            s.push('\n');
        }
        s
    }

    /// The table as JSON: `{"columns": [...], "rows": [{...}, ...]}`.
    ///
    /// ```
    /// use tchbook_prelude::prelude::*;
    /// let mut m = RunManager::new();
    /// assert_eq!(m.table().to_json()["columns"][0], "run");
    /// # let _ = &mut m;
    /// ```
    pub fn to_json(&self) -> Value {
        json!({"columns": COLUMNS, "rows": self.results.iter().map(row_json).collect::<Vec<_>>()})
    }

    /// Writes `<name>.csv` and `<name>.json`.
    ///
    /// ```no_run
    /// use tchbook_prelude::prelude::*;
    /// let mut m = RunManager::new();
    /// m.table().save("results").unwrap();
    /// ```
    pub fn save(&self, name: impl AsRef<Path>) -> std::io::Result<()> {
        let name = name.as_ref();
        std::fs::write(name.with_extension("csv"), self.to_csv())?;
        std::fs::write(
            name.with_extension("json"),
            serde_json::to_string_pretty(&self.to_json()).unwrap_or_default(),
        )
    }
}

impl Render for RunTable {
    fn bundle(&self) -> Bundle {
        let header: Vec<String> = COLUMNS.iter().map(|s| s.to_string()).collect();
        let rows: Vec<Vec<String>> = self.results.iter().map(row_text).collect();
        Bundle::text(text_table(&header, &rows))
            .with_html(html_table(None, &header, &rows))
            .with_data("run-table", self.to_json())
    }
}

rich!(RunTable);

/// Mean epoch duration per device, and how many times faster than the CPU.
///
/// ```
/// use tchbook_prelude::prelude::*;
/// let mut m = RunManager::new();
/// let cmp = m.compare_devices();
/// assert!(cmp.rows.is_empty());
/// # let _ = &mut m;
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct DeviceComparison {
    /// (device, mean epoch seconds, speed-up over cpu).
    pub rows: Vec<(String, f64, Option<f64>)>,
}

impl Render for DeviceComparison {
    fn bundle(&self) -> Bundle {
        let header = ["device", "mean epoch duration (s)", "speed-up vs cpu"]
            .map(String::from)
            .to_vec();
        let rows: Vec<Vec<String>> = self
            .rows
            .iter()
            .map(|(d, m, s)| {
                vec![
                    d.clone(),
                    format!("{m:.3}"),
                    s.map(|s| format!("{s:.2}×")).unwrap_or_else(|| "—".into()),
                ]
            })
            .collect();
        let json = json!({"rows": self.rows.iter().map(|(d, m, s)| json!({"device": d, "mean_epoch_duration": m, "speedup_vs_cpu": s})).collect::<Vec<_>>()});
        Bundle::text(text_table(&header, &rows))
            .with_html(html_table(None, &header, &rows))
            .with_data("device-comparison", json)
    }
}

rich!(DeviceComparison);
