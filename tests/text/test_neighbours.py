from ctxsent.text import neighbours


def test_neighbours_give_previous_and_next_with_empty_ends():
    assert neighbours(["a", "b", "c"]) == [("", "b"), ("a", "c"), ("b", "")]
    assert neighbours(["only"]) == [("", "")]
    assert neighbours([]) == []
