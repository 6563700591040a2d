//! The names of the ipywidgets protocol, version 2 (jupyter-widgets' `packages/schema/
//! messages.md`), which the prelude's widgets speak and the kernel routes: a widget is a comm of
//! target [`TARGET`] whose `comm_open` carries the model's whole state and the message metadata
//! `{"version": "2.1.0"}`; it is shown by a `display_data` of [`VIEW_MIME`]. State changes travel
//! as `comm_msg`s `{"method": "update", "state": {...}, "buffer_paths": []}` both ways; the front
//! end asks for a model's state with `request_state` (a page reloaded), and for every model's at
//! once on a comm of target [`CONTROL_TARGET`] (`request_states` → `update_states`).

/// The comm target of every widget model.
pub const TARGET: &str = "jupyter.widget";

/// The comm target on which a reloaded page asks for every model's state at once.
pub const CONTROL_TARGET: &str = "jupyter.widget.control";

/// The protocol version a widget's `comm_open` names in its message metadata.
pub const PROTOCOL_VERSION: &str = "2.1.0";

/// The MIME type of a widget's view: `{"model_id": <comm id>, "version_major": 2,
/// "version_minor": 0}`.
pub const VIEW_MIME: &str = "application/vnd.jupyter.widget-view+json";

/// The message metadata of a widget's `comm_open` and `comm_msg`s.
///
/// ```
/// assert_eq!(tchbook_wire::widgets::metadata()["version"], "2.1.0");
/// ```
pub fn metadata() -> serde_json::Map<String, serde_json::Value> {
    serde_json::Map::from_iter([("version".to_owned(), PROTOCOL_VERSION.into())])
}
