//! rust-analyzer on a crate of its own, for the analyzer process ([`super::server`]): evcxr
//! 0.22.0's `RustAnalyzer` (its `src/rust_analyzer.rs`, Copyright 2020 The Evcxr Authors,
//! Apache-2.0 OR MIT) less what only evcxr's type step uses, with what the kernel's completion
//! needs of it:
//!
//! - no private items: every source root is "local" here (`load`), so rust-analyzer would offer
//!   private fields of std and tch (`Vec`'s `buf`, `Tensor`'s `c_tensor`) first;
//! - matches sorted by rust-analyzer's relevance score (its own order is not by relevance);
//! - each match's signature and documentation, which rust-analyzer computes anyway (no field is
//!   left to resolve), for the completion index, which then answers documentation requests
//!   without rust-analyzer;
//! - a failed `cargo metadata` (a lock file being written, a registry out of reach) is an error:
//!   rust-analyzer would quietly fall back to the crate without its dependencies, and every
//!   answer would then know std alone.
//!
//! The source it analyses is evcxr's: `CommandContext::completion_source` and `hover_source`
//! shape a cell as evcxr's own completion and hover do.

use anyhow::{Context, Result, anyhow, bail};
use ra_ap_base_db::SourceRoot;
use ra_ap_hir::{ChangeWithProcMacros, PrefixKind};
use ra_ap_ide::{
    AnalysisHost, CallableSnippets, CompletionConfig, CompletionFieldsToResolve,
    CompletionItemKind, FilePosition, FileRange, HoverConfig, HoverDocFormat, RaFixtureConfig,
    SubstTyLen,
};
use ra_ap_ide_db::imports::insert_use::{ImportGranularity, InsertUseConfig};
use ra_ap_ide_db::{FxHashMap, SnippetCap, SymbolKind};
use ra_ap_paths::AbsPathBuf;
use ra_ap_project_model::{
    CargoConfig, ProjectManifest, ProjectWorkspace, ProjectWorkspaceKind, RustLibSource,
};
use ra_ap_syntax::TextRange;
use ra_ap_vfs::loader::{Directories, Entry, Handle, LoadingProgress, Message};
use ra_ap_vfs::{Change, FileId, Vfs, VfsPath};
use regex::Regex;
use std::path::Path;
use std::sync::LazyLock;
use tchbook_cellcode::AnalysisSource;

/// rust-analyzer on the crate whose `Cargo.toml` is in a folder; it writes that folder's
/// `src/lib.rs`.
pub(crate) struct StandaloneAnalyzer {
    root: AbsPathBuf,
    host: AnalysisHost,
    vfs: Vfs,
    loader: ra_ap_vfs_notify::NotifyHandle,
    loaded: crossbeam_channel::Receiver<Message>,
    last_cargo_toml: Option<Vec<u8>>,
    source_file: AbsPathBuf,
    source_file_id: FileId,
    source: String,
}

/// Completions at one offset: the matches, and the range of the source they replace.
pub(crate) struct Completions {
    pub(crate) completions: Vec<Completion>,
    pub(crate) start_offset: usize,
    pub(crate) end_offset: usize,
}

/// One match.
pub(crate) struct Completion {
    /// What it inserts, argument placeholders as their names.
    pub(crate) code: String,
    /// Jupyter's kind (`function`, `class`, `module`, `instance`, `keyword`).
    pub(crate) kind: &'static str,
    /// Its signature (`pub fn push(&mut self, value: T)`), if any.
    pub(crate) detail: Option<String>,
    /// Its documentation, as markdown, if any.
    pub(crate) documentation: Option<String>,
}

impl StandaloneAnalyzer {
    pub(crate) fn new(root: &Path) -> Result<StandaloneAnalyzer> {
        let (sender, loaded) = crossbeam_channel::unbounded();
        let mut vfs = Vfs::default();
        let root = AbsPathBuf::try_from(root.to_str().context("the folder is not UTF-8")?)
            .map_err(|path| anyhow!("the folder is not absolute: '{path:?}'"))?;
        let source_file = root.join("src/lib.rs");
        // The loader checks that the file exists when it works out the crate's structure, though
        // its text is then given through the vfs.
        let src = root.join("src");
        std::fs::create_dir_all(&src).with_context(|| format!("creating `{src:?}`"))?;
        let vfs_source_file: VfsPath = source_file.clone().into();
        vfs.set_file_contents(vfs_source_file.clone(), Some(vec![]));
        let (source_file_id, _) = vfs
            .file_id(&vfs_source_file)
            .context("the source file has no id")?;
        Ok(StandaloneAnalyzer {
            root,
            host: AnalysisHost::default(),
            vfs,
            loader: ra_ap_vfs_notify::NotifyHandle::spawn(sender),
            loaded,
            last_cargo_toml: None,
            source_file,
            source_file_id,
            source: String::new(),
        })
    }

    /// Completions at `source.offset`, most relevant first, with offsets in `source.code`.
    pub(crate) fn completions(&mut self, source: &AnalysisSource) -> Result<Completions> {
        self.set_source(&source.code)?;
        let position = FilePosition {
            file_id: self.source_file_id,
            offset: u32::try_from(source.offset)?.into(),
        };
        let items = match self.host.analysis().completions(&config(), position, None) {
            Ok(Some(items)) => items,
            _ => Vec::new(),
        };
        let mut scored = Vec::new();
        let mut range = None;
        for item in items {
            let mut edits = item.text_edit.iter();
            let Some(edit) = edits.next() else {
                continue;
            };
            if edits.next().is_some() {
                bail!("a completion made more than one insertion or deletion");
            }
            // rust-analyzer offers every method and field there is; those that do not start
            // with what is typed are left out.
            if !item.lookup().starts_with(&self.source[edit.delete]) {
                continue;
            }
            match range {
                Some(previous) if previous != edit.delete => {
                    bail!("completions wanted to replace different parts of the text")
                }
                _ => range = Some(edit.delete),
            }
            let completion = Completion {
                code: ARGUMENT.replace_all(&edit.insert, "$1").replace("$0", ""),
                kind: jupyter_kind(item.kind),
                detail: item.detail.clone(),
                documentation: item.documentation.as_ref().map(|d| d.as_str().to_owned()),
            };
            scored.push((item.relevance.score(), completion));
        }
        // Stable: equals keep rust-analyzer's order.
        scored.sort_by_key(|(score, _)| std::cmp::Reverse(*score));
        let offset = |end: fn(TextRange) -> usize| range.map_or(source.offset, end);
        Ok(Completions {
            completions: scored.into_iter().map(|(_, c)| c).collect(),
            start_offset: offset(|range| range.start().into()),
            end_offset: offset(|range| range.end().into()),
        })
    }

    /// The documentation at `source.offset`, as markdown or plain text.
    pub(crate) fn hover(
        &mut self,
        source: &AnalysisSource,
        markdown: bool,
    ) -> Result<Option<String>> {
        self.set_source(&source.code)?;
        let offset = u32::try_from(source.offset)?.into();
        let config = HoverConfig {
            links_in_hover: true,
            memory_layout: None,
            documentation: true,
            keywords: true,
            format: if markdown {
                HoverDocFormat::Markdown
            } else {
                HoverDocFormat::PlainText
            },
            max_trait_assoc_items_count: None,
            max_fields_count: Some(5),
            max_enum_variants_count: Some(5),
            max_subst_ty_len: SubstTyLen::Unlimited,
            show_drop_glue: false,
            ra_fixture: RaFixtureConfig::default(),
        };
        let range = FileRange {
            file_id: self.source_file_id,
            range: TextRange::new(offset, offset),
        };
        match self.host.analysis().hover(&config, range) {
            Ok(found) => Ok(found.map(|found| found.info.markup.into())),
            Err(_) => bail!("rust-analyzer's hover failed"),
        }
    }

    fn set_source(&mut self, source: &str) -> Result<()> {
        self.source = source.to_owned();
        let mut change = ChangeWithProcMacros::default();
        std::fs::write(self.source_file.as_path(), source)
            .with_context(|| format!("writing {:?}", self.source_file))?;
        self.vfs.set_file_contents(
            self.source_file.clone().into(),
            Some(source.as_bytes().to_vec()),
        );
        change.change_file(self.source_file_id, Some(self.source.clone()));
        // Cargo.toml is read again when it changed (a cell's `:dep`).
        let manifest = self.root.join("Cargo.toml");
        let cargo_toml =
            Some(std::fs::read(&manifest).with_context(|| format!("reading `{manifest:?}`"))?);
        if cargo_toml != self.last_cargo_toml {
            self.load(&mut change)?;
            self.last_cargo_toml = cargo_toml;
        }
        self.host.apply_change(change);
        Ok(())
    }

    /// Loads the crate's workspace (the standard library's sources included) into the vfs and
    /// gives `change` its files, source roots and crate graph.
    fn load(&mut self, change: &mut ChangeWithProcMacros) -> Result<()> {
        let manifest = ProjectManifest::from_manifest_file(self.root.join("Cargo.toml"))?;
        let config = CargoConfig {
            sysroot: Some(RustLibSource::Discover),
            ..CargoConfig::default()
        };
        let workspace = ProjectWorkspace::load(manifest, &config, &|_| {})?;
        if let ProjectWorkspaceKind::Cargo {
            error: Some(error), ..
        } = &workspace.kind
        {
            bail!("cargo metadata failed, so the dependencies are unknown: {error:#}");
        }
        let load = workspace
            .to_roots()
            .iter()
            .map(|root| {
                Entry::Directories(Directories {
                    extensions: vec!["rs".to_owned()],
                    include: root.include.clone(),
                    exclude: root.exclude.clone(),
                })
            })
            .collect();
        // Setting the configuration is what starts the loading.
        self.loader.set_config(ra_ap_vfs::loader::Config {
            version: 1,
            load,
            watch: vec![],
        });
        for message in &self.loaded {
            match message {
                Message::Progress {
                    n_done: LoadingProgress::Finished,
                    ..
                } => break,
                Message::Progress { .. } => {}
                Message::Loaded { files } | Message::Changed { files } => {
                    for (path, contents) in files {
                        self.vfs
                            .set_file_contents(path.to_path_buf().into(), contents.clone());
                    }
                }
            }
        }
        for (file_id, changed) in self.vfs.take_changes() {
            let text = match changed.change {
                Change::Create(bytes, _) | Change::Modify(bytes, _) => {
                    String::from_utf8(bytes).ok()
                }
                _ => None,
            };
            change.change_file(file_id, text);
        }
        change.set_roots(
            ra_ap_vfs::file_set::FileSetConfig::default()
                .partition(&self.vfs)
                .into_iter()
                .map(SourceRoot::new_local)
                .collect(),
        );
        let vfs = &self.vfs;
        let (graph, _) = workspace.to_crate_graph(
            &mut |path| vfs.file_id(&path.to_path_buf().into()).map(|(id, _)| id),
            &FxHashMap::default(),
        );
        change.set_crate_graph(graph);
        Ok(())
    }
}

/// An argument placeholder of a snippet (`${1:value}`), to be replaced by its name.
static ARGUMENT: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"\$\{[0-9]+:([^}]*)\}").expect("a valid pattern"));

/// What completion offers: evcxr's settings, but no private items (see the module's docs).
fn config() -> CompletionConfig<'static> {
    CompletionConfig {
        enable_postfix_completions: true,
        snippet_cap: SnippetCap::new(true),
        enable_imports_on_the_fly: false,
        enable_self_on_the_fly: true,
        enable_private_editable: false,
        prefer_no_std: false,
        full_function_signatures: true,
        snippets: vec![],
        insert_use: InsertUseConfig {
            prefix_kind: PrefixKind::ByCrate,
            group: false,
            granularity: ImportGranularity::Item,
            enforce_granularity: false,
            skip_glob_imports: false,
        },
        callable: Some(CallableSnippets::FillArguments),
        limit: None,
        prefer_prelude: false,
        enable_term_search: true,
        term_search_fuel: 400,
        prefer_absolute: false,
        add_semicolon_to_unit: true,
        fields_to_resolve: CompletionFieldsToResolve::empty(),
        exclude_flyimport: vec![],
        exclude_traits: &[],
        enable_auto_iter: true,
        enable_auto_await: true,
        ra_fixture: RaFixtureConfig::default(),
        add_colons_to_module: true,
    }
}

/// Jupyter's kind of a match (evcxr's mapping).
fn jupyter_kind(kind: CompletionItemKind) -> &'static str {
    use CompletionItemKind as K;
    match kind {
        K::SymbolKind(
            SymbolKind::Function
            | SymbolKind::Method
            | SymbolKind::Macro
            | SymbolKind::ProcMacro
            | SymbolKind::Derive
            | SymbolKind::DeriveHelper
            | SymbolKind::Attribute
            | SymbolKind::BuiltinAttr,
        ) => "function",
        K::SymbolKind(
            SymbolKind::Struct
            | SymbolKind::Enum
            | SymbolKind::Union
            | SymbolKind::Trait
            | SymbolKind::TypeAlias
            | SymbolKind::TypeParam
            | SymbolKind::SelfType,
        ) => "class",
        K::SymbolKind(SymbolKind::Module | SymbolKind::CrateRoot | SymbolKind::ToolModule) => {
            "module"
        }
        K::Keyword => "keyword",
        _ => "instance",
    }
}
