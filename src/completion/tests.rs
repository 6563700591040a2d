use super::*;

#[tokio::test]
async fn a_busy_engine_leaves_the_index_to_answer_from_the_cell() {
    let build = tempfile::tempdir().unwrap();
    let cache = tempfile::tempdir().unwrap();
    let index = Index {
        scope: vec![messages::Item::new("debug_assert!", "function")],
        ..Index::default()
    };
    index::save(&index_path(cache.path()), &index).unwrap();
    let completer = Completer::new(build.path(), Some(cache.path()), "");
    completer.cell_ran();
    let busy = std::future::pending::<Prepared>;
    let code = "struct P { x: f64 }\nlet alpha = P { x: 1.0 };\nalpha.";
    let found = completer.complete(code, code.len(), busy()).await;
    let names: Vec<_> = found.matches.iter().map(|m| m.text.as_str()).collect();
    assert_eq!(names, ["x"]);
    assert_eq!((found.start, found.end), (code.len(), code.len()));
    let found = completer.complete("let beta = 2;\nbe", 16, busy()).await;
    assert_eq!(found.matches[0].text, "beta");
    assert_eq!(found.start, 14);
    let found = completer.complete("let d = de", 10, busy()).await;
    assert_eq!(found.matches[0].text, "debug_assert!");
    // `:` commands are the engine's to complete.
    let found = completer.complete(":de", 3, busy()).await;
    assert!(found.matches.is_empty(), "{found:?}");
    assert_eq!(completer.documentation("x", 1, busy()).await, None);
}

#[tokio::test]
async fn until_a_cell_ran_the_index_answers_without_asking_the_engine() {
    let build = tempfile::tempdir().unwrap();
    let cache = tempfile::tempdir().unwrap();
    let mut index = Index {
        scope: vec![messages::Item::new("Tensor", "class")],
        ..Index::default()
    };
    index.docs.by_path.insert("Tensor".into(), 0);
    index.docs.texts.push(messages::Doc {
        signature: Some("pub struct Tensor".into()),
        text: Some("A tensor object.".into()),
    });
    index::save(&index_path(cache.path()), &index).unwrap();
    let completer = Completer::new(build.path(), Some(cache.path()), "");
    // The engine, busy starting: each time the completer asks it, it counts.
    let asked = std::sync::atomic::AtomicUsize::new(0);
    let busy = || {
        std::future::poll_fn(|_| {
            asked.fetch_add(1, Ordering::Relaxed);
            std::task::Poll::<Prepared>::Pending
        })
    };
    let found = completer.complete("let t = Ten", 11, busy()).await;
    assert_eq!(found.matches[0].text, "Tensor");
    let (plain, _) = completer.documentation("Tensor", 6, busy()).await.unwrap();
    assert!(plain.contains("A tensor object."), "{plain}");
    assert_eq!(asked.load(Ordering::Relaxed), 0);
    // `:` commands are the engine's, and so is everything once a cell has run.
    completer.complete(":de", 3, busy()).await;
    assert!(asked.load(Ordering::Relaxed) > 0);
    asked.store(0, Ordering::Relaxed);
    completer.cell_ran();
    let found = completer.complete("let t = Ten", 11, busy()).await;
    assert_eq!(found.matches[0].text, "Tensor");
    assert!(asked.load(Ordering::Relaxed) > 0);
}

#[test]
fn offsets_map_back_around_the_cursor() {
    let source = Source {
        code: "fn w() {\n    v.le\n}".into(),
        offset: 17,
    };
    // `le` (15..17 in the source) is 2..4 of the cell `v.le`.
    assert_eq!(user_offset(&source, 4, 15), Some(2));
    assert_eq!(user_offset(&source, 4, 17), Some(4));
    assert_eq!(user_offset(&source, 4, 18), Some(5));
    assert_eq!(user_offset(&source, 1, 10), None);
}
