use super::*;

#[test]
fn a_debug_text_reads_back_into_its_structure() {
    let node = Parser::new(
        "Net { conv1: Conv { ws: Tensor[[6, 3, 5, 5], Float], bs: Some([0.1, -0.2]), \
         config: ConvConfigND { stride: [1, 1], groups: 1, name: \"a, b }\" } }, n: 3 }",
    )
    .value();
    let conv = node.field("conv1").unwrap();
    assert_eq!(
        conv.field("ws").unwrap().tensor_shape(),
        Some(vec![6, 3, 5, 5])
    );
    assert_eq!(
        conv.field("bs").unwrap().some().unwrap().tensor_shape(),
        Some(vec![2])
    );
    assert_eq!(
        conv.field("config").unwrap().field("name"),
        Some(&Node::Atom("\"a, b }\"".into()))
    );
    assert_eq!(node.field("n").unwrap().int(), Some(3));
}

#[test]
fn python_numbers_and_tuples() {
    assert_eq!(py_float("1e-5"), "1e-05");
    assert_eq!(py_float("0.1"), "0.1");
    assert_eq!(py_tuple(&[1]), "(1,)");
    assert_eq!(py_tuple(&[5, 5]), "(5, 5)");
}
