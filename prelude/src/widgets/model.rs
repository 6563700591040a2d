//! A widget's model: its synced state behind a lock, its comm (opened at the first show, closed
//! by `close`), its listeners, and the process-wide registry of open models the front end's
//! messages are answered from.
//!
//! Two threads besides the cell's touch a model: the side channel's thread, which applies the
//! front end's updates the moment they arrive (so a loop reading a value sees them), and the one
//! callback thread, which runs the listeners those updates queue. Nothing runs user code while
//! holding a model's lock or the registry's. A model's messages to the front end (open, update,
//! close) are written while its lock is held, so they leave in the order they were applied; the
//! registry's lock is taken inside a model's, never the other way round (the registry hands out
//! `Arc`s and lets go before a model is locked).

use super::callbacks::{self, Job, Queue};
use super::kind::{self, Kind};
use super::layout::LAYOUT;
use super::validate::Checked;
use crate::runtime::{self, Message};
use serde_json::{Map, Value};
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, PoisonError};
use tchbook_wire::widgets;

/// What a listener is told: the keys that changed, with their new values, and the whole state
/// after the change.
pub(crate) struct Change {
    pub(crate) keys: Map<String, Value>,
    pub(crate) state: Map<String, Value>,
}

/// A listener on a model's state, run on the callback thread.
pub(crate) type Listener = Arc<dyn Fn(&Change) + Send + Sync>;

/// A listener on a model's custom messages (a button's click), run on the callback thread.
pub(crate) type CustomListener = Arc<dyn Fn(&Value) + Send + Sync>;

/// One widget model. Public in a private module: the sealed half of [`super::Widget`].
pub struct Model {
    id: String,
    kind: &'static Kind,
    /// Custom messages received (a button's clicks), counted on the socket thread.
    events: AtomicU64,
    inner: Mutex<Inner>,
}

struct Inner {
    state: Map<String, Value>,
    open: bool,
    /// Its own layout and style models, opened before it and closed with it.
    own: Vec<Arc<Model>>,
    /// A box's children, opened before it.
    children: Vec<Arc<Model>>,
    listeners: Vec<(Vec<&'static str>, Listener)>,
    custom: Vec<CustomListener>,
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    // A listener that panicked never held these locks; a poisoned lock only means a panic
    // elsewhere in the same critical section, whose state is still a whole JSON map.
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Model {
    /// A model of `kind` at its default state, with its own layout and, for described widgets,
    /// its own style model.
    pub(crate) fn new(kind: &'static Kind) -> Arc<Model> {
        let mut state = kind::state(kind);
        let mut own = Vec::new();
        if kind.has_layout {
            let layout = Model::bare(&LAYOUT);
            state.insert("layout".into(), kind::reference(&layout.id));
            own.push(layout);
        }
        if let Some(style) = kind.style {
            let style = Model::bare(style);
            state.insert("style".into(), kind::reference(&style.id));
            own.push(style);
        }
        let model = Arc::new(Model::with_state(kind, state));
        lock(&model.inner).own = own;
        model
    }

    fn bare(kind: &'static Kind) -> Arc<Model> {
        Arc::new(Model::with_state(kind, kind::state(kind)))
    }

    fn with_state(kind: &'static Kind, state: Map<String, Value>) -> Model {
        Model {
            id: uuid::Uuid::new_v4().simple().to_string(),
            kind,
            events: AtomicU64::new(0),
            inner: Mutex::new(Inner {
                state,
                open: false,
                own: Vec::new(),
                children: Vec::new(),
                listeners: Vec::new(),
                custom: Vec::new(),
            }),
        }
    }

    /// The comm id, which is the model id.
    pub(crate) fn id(&self) -> &str {
        &self.id
    }

    /// What kind of widget (or layout, or style) it is.
    pub(crate) fn kind(&self) -> &'static Kind {
        self.kind
    }

    /// One attribute's value (`Null` if the model has none of that name).
    pub(crate) fn get(&self, key: &str) -> Value {
        lock(&self.inner)
            .state
            .get(key)
            .cloned()
            .unwrap_or(Value::Null)
    }

    /// The whole state.
    pub(crate) fn state(&self) -> Map<String, Value> {
        lock(&self.inner).state.clone()
    }

    /// The models this one references: its layout and style, then a box's children.
    pub(crate) fn parts(&self) -> Vec<Arc<Model>> {
        let inner = lock(&self.inner);
        inner.own.iter().chain(&inner.children).cloned().collect()
    }

    /// A box's children.
    pub(crate) fn children(&self) -> Vec<Arc<Model>> {
        lock(&self.inner).children.clone()
    }

    /// Custom messages received so far.
    pub(crate) fn events(&self) -> u64 {
        self.events.load(Ordering::SeqCst)
    }

    /// Sets attributes from this side: the front end gets an `update` of the keys whose values
    /// changed if the comm is open, and their listeners are queued.
    pub(crate) fn set(&self, changes: Map<String, Value>) {
        self.change(|_| changes, None);
    }

    /// [`set`](Self::set) of changes made from the state as it is, under the model's lock: a
    /// read-modify-write (an output appended, a value kept within bounds) that another thread's
    /// change cannot interleave with.
    pub(crate) fn set_with(&self, changes: impl FnOnce(&Map<String, Value>) -> Map<String, Value>) {
        self.change(changes, None);
    }

    /// [`set`](Self::set), and a box's children replaced (opened first if this model is open).
    pub(crate) fn set_with_children(&self, changes: Map<String, Value>, children: Vec<Arc<Model>>) {
        self.change(|_| changes, Some(children));
    }

    fn change(
        &self,
        changes: impl FnOnce(&Map<String, Value>) -> Map<String, Value>,
        children: Option<Vec<Arc<Model>>>,
    ) {
        let open = {
            let mut inner = lock(&self.inner);
            if let Some(children) = children {
                inner.children = children;
            }
            inner.open
        };
        if open {
            for part in self.parts() {
                part.open();
            }
        }
        let jobs = {
            let mut inner = lock(&self.inner);
            let changes = changes(&inner.state);
            // Only what changed travels: a loop setting the same label each step sends nothing.
            let changed = apply(&mut inner.state, &changes);
            if inner.open && !changed.is_empty() {
                // Written under the lock, so that two threads' updates reach the front end in
                // the order they were applied here (emit runs no user code and takes no lock of
                // a model).
                runtime::emit(&Message::CommMsg {
                    comm_id: self.id.clone(),
                    data: update("update", changed.clone()),
                    metadata: widgets::metadata(),
                });
            }
            listeners_for(&inner, changed)
        };
        queue_all(jobs);
    }

    /// Applies a front end's `update`: the keys this model has, each checked first
    /// ([`kind::check`]). Returns the messages to send back: an `echo_update` of
    /// the keys applied as they came (as ipywidgets 8 echoes them), an `update` with the model's
    /// value for each key kept within bounds or refused (so the front end shows what the model
    /// holds), and a line on stderr naming each refusal; and queues the listeners of the keys
    /// whose values changed.
    pub(crate) fn apply_front_end(&self, state: &Map<String, Value>) -> Vec<Message> {
        let (echo, corrected, refused, jobs) = {
            let mut inner = lock(&self.inner);
            let (mut echo, mut applied, mut corrected) = (Map::new(), Map::new(), Map::new());
            let mut refused = Vec::new();
            for (key, value) in state {
                if !inner.state.contains_key(key) {
                    continue;
                }
                match kind::check(self.kind, &inner.state, key, value) {
                    Checked::Accepted => {
                        echo.insert(key.clone(), value.clone());
                        applied.insert(key.clone(), value.clone());
                    }
                    Checked::Corrected(kept) => {
                        applied.insert(key.clone(), kept.clone());
                        corrected.insert(key.clone(), kept);
                    }
                    Checked::Refused(why) => {
                        let now = inner.state.get(key).cloned().unwrap_or(Value::Null);
                        refused.push(format!("`{key}` ({why}; it stays {now})"));
                        corrected.insert(key.clone(), now);
                    }
                }
            }
            let changed = apply(&mut inner.state, &applied);
            let name = inner
                .state
                .get("_model_name")
                .cloned()
                .unwrap_or(Value::Null);
            let refused = (!refused.is_empty()).then(|| {
                format!(
                    "A widget ({}) refused a change from the front end: {}\n",
                    name.as_str().unwrap_or("?").trim_end_matches("Model"),
                    refused.join(", ")
                )
            });
            (echo, corrected, refused, listeners_for(&inner, changed))
        };
        queue_all(jobs);
        let mut messages = Vec::new();
        if !echo.is_empty() {
            messages.push(Message::CommMsg {
                comm_id: self.id.clone(),
                data: update("echo_update", echo),
                metadata: widgets::metadata(),
            });
        }
        if !corrected.is_empty() {
            messages.push(Message::CommMsg {
                comm_id: self.id.clone(),
                data: update("update", corrected),
                metadata: widgets::metadata(),
            });
        }
        if let Some(text) = refused {
            messages.push(Message::Stream {
                name: tchbook_wire::StreamName::Stderr,
                text,
            });
        }
        messages
    }

    /// A custom message from the front end (`{"method": "custom", "content": ..}`): counted,
    /// and its listeners queued.
    pub(crate) fn receive_custom(&self, content: Value) {
        self.events.fetch_add(1, Ordering::SeqCst);
        let listeners = lock(&self.inner).custom.clone();
        let content = Arc::new(content);
        queue_all(listeners.into_iter().map(|listener| {
            let content = Arc::clone(&content);
            Box::new(move || listener(&content)) as Job
        }));
    }

    /// Runs `listener` (on the callback thread) whenever one of `keys` changes value.
    pub(crate) fn listen(&self, keys: &[&'static str], listener: Listener) {
        lock(&self.inner).listeners.push((keys.to_vec(), listener));
    }

    /// Runs `listener` (on the callback thread) for each custom message.
    pub(crate) fn listen_custom(&self, listener: CustomListener) {
        lock(&self.inner).custom.push(listener);
    }

    /// The full-state `update` a `request_state` asks for.
    pub(crate) fn full_update(&self) -> Message {
        Message::CommMsg {
            comm_id: self.id.clone(),
            data: update("update", self.state()),
            metadata: widgets::metadata(),
        }
    }

    /// Opens the comm inside a kernel, its parts' first (a no-op once open, and outside a
    /// kernel, where there is no front end). Returns whether the model is open.
    pub(crate) fn open(self: &Arc<Self>) -> bool {
        if !runtime::in_kernel() {
            return false;
        }
        if self.is_open() {
            return true;
        }
        for part in &self.parts() {
            part.open();
        }
        let mut inner = lock(&self.inner);
        if inner.open {
            return true;
        }
        inner.open = true;
        let mut data = Map::new();
        data.insert("state".into(), Value::Object(inner.state.clone()));
        data.insert("buffer_paths".into(), Value::Array(Vec::new()));
        // Registered before the front end hears of it, so its first answer finds the model; and
        // written under the lock, so another thread's update cannot reach the front end before
        // the comm it updates.
        registry().insert(Arc::clone(self));
        runtime::emit(&Message::CommOpen {
            comm_id: self.id.clone(),
            target_name: widgets::TARGET.into(),
            data,
            metadata: widgets::metadata(),
        });
        true
    }

    /// Whether the comm is open.
    pub(crate) fn is_open(&self) -> bool {
        lock(&self.inner).open
    }

    /// Closes the comm and its own layout and style (not a box's children, which may be shown
    /// elsewhere); the registry forgets them. A closed model can be shown again: it reopens as a
    /// new comm of the same id, as a fresh `comm_open` with its state.
    pub(crate) fn close(&self) {
        let own = lock(&self.inner).own.clone();
        self.close_comm();
        for part in own {
            part.close_comm();
        }
    }

    fn close_comm(&self) {
        let mut inner = lock(&self.inner);
        let was_open = std::mem::replace(&mut inner.open, false);
        registry().remove(&self.id);
        if was_open {
            runtime::emit(&Message::CommClose {
                comm_id: self.id.clone(),
                data: Map::new(),
            });
        }
    }

    /// The front end closed the comm: forget it without telling it back.
    pub(crate) fn closed_by_front_end(&self) {
        lock(&self.inner).open = false;
        registry().remove(&self.id);
    }
}

/// Sets `changes` in `state`; returns the keys whose values changed.
fn apply(state: &mut Map<String, Value>, changes: &Map<String, Value>) -> Map<String, Value> {
    let mut changed = Map::new();
    for (key, value) in changes {
        if state.get(key) != Some(value) {
            state.insert(key.clone(), value.clone());
            changed.insert(key.clone(), value.clone());
        }
    }
    changed
}

fn listeners_for(inner: &Inner, changed: Map<String, Value>) -> Vec<Job> {
    if changed.is_empty() {
        return Vec::new();
    }
    let change = Arc::new(Change {
        keys: changed,
        state: inner.state.clone(),
    });
    inner
        .listeners
        .iter()
        .filter(|(keys, _)| keys.iter().any(|k| change.keys.contains_key(*k)))
        .map(|(_, listener)| {
            let (listener, change) = (Arc::clone(listener), Arc::clone(&change));
            Box::new(move || listener(&change)) as Job
        })
        .collect()
}

/// A comm message's data for a state sync: `{"method", "state", "buffer_paths": []}`.
fn update(method: &str, state: Map<String, Value>) -> Map<String, Value> {
    let mut data = Map::new();
    data.insert("method".into(), method.into());
    data.insert("state".into(), Value::Object(state));
    data.insert("buffer_paths".into(), Value::Array(Vec::new()));
    data
}

/// The open models and control comms of this process, and the callback thread's queue: one for
/// every copy of the prelude the cells link (`runtime::shared`).
pub(crate) struct Registry {
    models: Mutex<HashMap<String, Arc<Model>>>,
    controls: Mutex<Vec<String>>,
    jobs: Queue,
}

pub(crate) fn registry() -> &'static Registry {
    static LOCAL: OnceLock<&'static Registry> = OnceLock::new();
    LOCAL.get_or_init(|| {
        let slot = &runtime::shared().widgets;
        let found = slot.load(Ordering::SeqCst);
        if !found.is_null() {
            // SAFETY: the slot only ever holds a leaked `Registry` (below), never freed.
            return unsafe { &*(found as *const Registry) };
        }
        let fresh = Box::into_raw(Box::new(Registry {
            models: Mutex::new(HashMap::new()),
            controls: Mutex::new(Vec::new()),
            jobs: Mutex::new(None),
        }));
        match slot.compare_exchange(
            std::ptr::null_mut(),
            fresh.cast(),
            Ordering::SeqCst,
            Ordering::SeqCst,
        ) {
            // SAFETY: just leaked, and from now on published: never freed.
            Ok(_) => unsafe { &*fresh },
            Err(theirs) => {
                // Another copy of the prelude published its registry first: use that one.
                // SAFETY: ours was never published, so nothing else points to it.
                drop(unsafe { Box::from_raw(fresh) });
                // SAFETY: the slot only ever holds a leaked `Registry`, never freed.
                unsafe { &*(theirs as *const Registry) }
            }
        }
    })
}

impl Registry {
    fn insert(&self, model: Arc<Model>) {
        lock(&self.models).insert(model.id.clone(), model);
    }

    fn remove(&self, id: &str) {
        lock(&self.models).remove(id);
    }

    /// The open model of comm `id`.
    pub(crate) fn model(&self, id: &str) -> Option<Arc<Model>> {
        lock(&self.models).get(id).cloned()
    }

    /// Every open model, in no particular order.
    pub(crate) fn models(&self) -> Vec<Arc<Model>> {
        lock(&self.models).values().cloned().collect()
    }

    pub(crate) fn add_control(&self, id: &str) {
        lock(&self.controls).push(id.to_owned());
    }

    /// The ids of the open models.
    pub(crate) fn open_models(&self) -> Vec<String> {
        lock(&self.models).keys().cloned().collect()
    }

    /// The ids of the open control comms.
    pub(crate) fn open_controls(&self) -> Vec<String> {
        lock(&self.controls).clone()
    }

    pub(crate) fn is_control(&self, id: &str) -> bool {
        lock(&self.controls).iter().any(|c| c == id)
    }

    pub(crate) fn remove_control(&self, id: &str) -> bool {
        let mut controls = lock(&self.controls);
        let before = controls.len();
        controls.retain(|c| c != id);
        controls.len() != before
    }
}

fn queue_all(jobs: impl IntoIterator<Item = Job>) {
    callbacks::queue_all(&registry().jobs, jobs);
}
