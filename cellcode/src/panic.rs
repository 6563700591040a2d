//! What a cell's panic (an interrupt is one) did to the variables it declared.
//!
//! evcxr loads the stored variables into the cell's function, runs the cell in `catch_unwind`
//! and stores its new variables at its end; a panic drops what the cell declared. A variable
//! declared again that the cell names nowhere else is put back by the panic branch; the kernel
//! tells the user what was put back and what is gone.

/// The variables a panicking cell affected, each list sorted by name.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PanicReport {
    /// Existed before the cell, declared again, and could not be put back: gone.
    pub lost: Vec<String>,
    /// Declared again, and hold their value from before the cell.
    pub reverted: Vec<String>,
    /// Declared for the first time: never stored.
    pub dropped: Vec<String>,
    /// Held by a cell interrupted in a wait that cannot be cut short
    /// (`tchbook_wire::HELD_BY_STOPPED_WAIT`): gone from the store.
    pub held: Vec<String>,
}

impl PanicReport {
    /// The report of a panic: `declared` gives each variable the cell declared and whether it
    /// was stored before the cell; `restored`, those the panic branch put back; `held`, those a
    /// stopped wait keeps.
    pub fn new<'a>(
        declared: impl IntoIterator<Item = (&'a str, bool)>,
        restored: impl IntoIterator<Item = &'a str>,
        held: &[String],
    ) -> PanicReport {
        let restored: Vec<&str> = restored.into_iter().collect();
        let mut report = PanicReport {
            reverted: restored.iter().map(|name| (*name).to_owned()).collect(),
            held: held.to_vec(),
            ..PanicReport::default()
        };
        for (name, stored_before) in declared {
            if !stored_before {
                report.dropped.push(name.to_owned());
            } else if !restored.contains(&name) {
                report.lost.push(name.to_owned());
            }
        }
        for list in [
            &mut report.lost,
            &mut report.reverted,
            &mut report.dropped,
            &mut report.held,
        ] {
            list.sort();
        }
        report
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn declared_variables_are_lost_reverted_or_dropped() {
        let declared = [("z", true), ("b", false), ("y", true), ("a", false)];
        let report = PanicReport::new(declared, ["y"], &["h2".into(), "h1".into()]);
        assert_eq!(report.lost, ["z"]);
        assert_eq!(report.reverted, ["y"]);
        assert_eq!(report.dropped, ["a", "b"]);
        assert_eq!(report.held, ["h1", "h2"]);
    }
}
