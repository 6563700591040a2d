//! Paths inside a build directory as they are stored: the directory written as a placeholder, so
//! that what is stored (the cargo front end's records, the link plan in them) travels with the
//! template into every kernel's slot.

use std::path::Path;

/// Stands for the build directory in what is stored.
pub(crate) const DIR_PLACEHOLDER: &str = "{tchbook-build-dir}";

/// `text` with the build directory written as the placeholder: `/slots/3/target/libdeps.so`
/// in `/slots/3` is `{tchbook-build-dir}/target/libdeps.so`.
pub(crate) fn relative(text: &str, dir: &Path) -> String {
    text.replace(&*dir.to_string_lossy(), DIR_PLACEHOLDER)
}

/// `text` with the placeholder written as the build directory.
pub(crate) fn absolute(text: &str, dir: &Path) -> String {
    text.replace(DIR_PLACEHOLDER, &dir.to_string_lossy())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_path_goes_there_and_back() {
        let dir = Path::new("/slots/3");
        let stored = relative("-L/slots/3/target/deps", dir);
        assert_eq!(stored, "-L{tchbook-build-dir}/target/deps");
        assert_eq!(
            absolute(&stored, Path::new("/slots/7")),
            "-L/slots/7/target/deps"
        );
    }
}
