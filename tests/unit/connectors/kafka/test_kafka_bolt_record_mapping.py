"""The records KafkaBolt writes, exactly: topic, key and value of each tuple and of each row of a
columnar batch (``batch_records``), through the default field mapper, a custom mapper and a topic
field, with the errors naming what could not be written. Against the stub producer of
``test_kafka_bolt_units``."""

from __future__ import annotations

from typing import Any

from test_kafka_bolt_units import Harness as TupleHarness
from test_kafka_bolt_units import Upper

from stormpy.connectors.kafka import TupleToKafkaMapper
from stormpy.connectors.kafka._bolt_batches import batch_records
from stormpy.topology import ColumnBatch, Fields, Tuple


class Harness(TupleHarness):
    """The tuple harness; a batch is recorded in ``acked``/``failed`` as itself."""

    def __init__(self, capacity: int = 1000, **settings: Any) -> None:
        super().__init__(capacity, **settings)
        b: Any = self.bolt
        b.ack = lambda t: self.acked.append(getattr(t, "values", t))
        b.fail = lambda t: self.failed.append(getattr(t, "values", t))


def _columns(*rows: tuple[Any, ...], fields: tuple[str, ...] = ("key", "message")) -> ColumnBatch:
    cols = [list(c) for c in zip(*rows, strict=True)]
    return ColumnBatch(None, "default", 1, "src", Fields(list(fields)), columns=cols, n=len(rows))


def _never(tup: Tuple, fields: tuple[str, str]) -> tuple[str | None, Any, Any]:
    raise AssertionError("the default field mapper with a fixed topic reads the columns directly")


def test_a_fixed_topic_batch_gives_every_row_its_key_and_value_as_bytes() -> None:
    batch = _columns(("k1", "a"), (None, b"b"), (3, 4.5), (b"k4", None))
    topics, keys, values = batch_records(batch, "out", True, ("key", "message"), _never)
    assert topics == ["out"] * 4
    assert keys == [b"k1", None, b"3", b"k4"]
    assert values == [b"a", b"b", b"4.5", None]


def test_a_batch_without_the_key_field_has_null_keys_and_values_already_bytes_pass_as_they_are() -> None:
    batch = _columns((b"a",), (None,), fields=("message",))
    assert batch_records(batch, "out", True, ("key", "message"), _never) == (
        ["out", "out"], [None, None], [b"a", None])
    mixed = _columns((b"k", b"a"), (b"k", 7), (b"k", "z"))  # a number after bytes is converted too
    assert batch_records(mixed, "t", True, ("key", "message"), _never) == (
        ["t"] * 3, [b"k"] * 3, [b"a", b"7", b"z"])


def test_a_batch_without_the_message_field_is_refused_naming_the_setting_and_the_fields() -> None:
    batch = _columns(("k",), fields=("key",))
    try:
        batch_records(batch, "out", True, ("key", "message"), _never)
    except KeyError as exc:
        assert exc.args[0] == ("KafkaBolt: batch from src/default has no field 'message' "
                               "(KafkaBoltConfig.message_field; fields: ['key'])")
    else:
        raise AssertionError("no KeyError")
    unnamed = ColumnBatch([["k", "m"]], "default", 1, "src", None)
    try:
        batch_records(unnamed, "out", True, ("key", "message"), _never)
    except KeyError as exc:
        assert exc.args[0].endswith("(KafkaBoltConfig.message_field; fields: [])")
    else:
        raise AssertionError("no KeyError")


def _seen(tup: Tuple, fields: tuple[str, str]) -> tuple[str | None, Any, Any]:
    """A mapper that shows what it was given: the row as a tuple of the batch's stream."""
    if tup.value("message") is None:
        return None, None, None
    return (f"{tup.component}.{tup.stream}.{tup.task}", f"{fields[0]}={tup.value('key')}",
            tup.value("message"))


def test_rows_go_through_the_mapper_as_tuples_of_the_batch_when_the_topic_is_not_fixed() -> None:
    batch = ColumnBatch([["k1", "a"], ["k2", None], ["k3", 5]], "words", 4, "splitter",
                        Fields(["key", "message"]))
    topics, keys, values = batch_records(batch, None, True, ("key", "message"), _seen)
    assert topics == ["splitter.words.4", None, "splitter.words.4"]
    assert keys == [b"key=k1", None, b"key=k3"]
    assert values == [b"a", None, b"5"]
    custom = batch_records(batch, "out", False, ("key", "message"), _seen)  # a custom mapper
    assert custom[0] == ["splitter.words.4", None, "splitter.words.4"]


def test_each_tuple_of_one_execute_batch_is_read_by_its_own_fields() -> None:
    h = Harness(key_field="word", message_field="count")
    a = Tuple(["cow", 3], "default", 1, "src", Fields(["word", "count"]))
    b = Tuple([4, "pig"], "default", 1, "src", Fields(["count", "word"]))
    c = Tuple([5], "default", 1, "src", Fields(["count"]))
    d = Tuple(["hen", 6], "default", 1, "src", Fields(["word", "count"]))
    h.bolt.execute_batch([a, b, c, d])
    assert h.stub.records == [("out", b"cow", b"3"), ("out", b"pig", b"4"), ("out", None, b"5"),
                              ("out", b"hen", b"6")]


def test_a_tuple_without_fields_is_refused_by_the_field_mapper_and_failed() -> None:
    h = Harness()
    h.bolt.execute(Tuple(["k", "m"], "default", 1, "src", None))
    assert h.stub.records == [] and h.failed == [["k", "m"]]
    assert len(h.errors) == 1 and h.errors[0].startswith("KafkaBolt: tuple from src/default not written: ")
    assert h.bolt.metrics()["bad_tuples"] == 1


def test_a_topic_field_holding_no_string_fails_the_tuple_naming_the_setting() -> None:
    h = Harness(topic=None, topic_field="topic")
    h.send(5, "k", "m", fields=("topic", "key", "message"))
    assert h.stub.records == [] and h.failed == [[5, "k", "m"]] and h.acked == []
    assert h.errors == ["KafkaBolt: tuple from src/default not written: KafkaBolt: field 'topic' "
                        "(KafkaBoltConfig.topic_field) holds 5, not a topic name"]


def test_a_tuple_without_a_topic_is_acked_skipped_and_reported_naming_the_field() -> None:
    h = Harness(topic=None, topic_field="dest")
    h.send(None, "k", "m", fields=("dest", "key", "message"))
    h.send("t", "k", "m2", fields=("dest", "key", "message"))
    assert h.acked == [[None, "k", "m"]] and h.stub.records == [("t", b"k", b"m2")]
    assert h.errors == ["KafkaBolt: no topic for tuple from src/default (field 'dest' missing or None, "
                        "no default_topic); acked and skipped"]
    assert h.bolt.metrics()["no_topic"] == 1


def test_a_batch_row_without_a_topic_is_skipped_and_reported_naming_the_field() -> None:
    h = Harness(topic=None, topic_field="dest")
    b = ColumnBatch([[None, "k", "m"], ["t", "k", "m2"]], "default", 1, "src",
                    Fields(["dest", "key", "message"]))
    h.bolt.execute_columns(b)
    assert h.stub.records == [("t", b"k", b"m2")]
    assert h.errors == ["KafkaBolt: no topic for a tuple of the batch from src/default (field 'dest' "
                        "missing or None, no default_topic); skipped"]
    settled: list[object] = []
    bolt: Any = h.bolt
    bolt.ack = settled.append
    h.stub.deliver(1)
    h.run_jobs()
    assert settled == [b]  # the batch acked once its one written row was delivered


def test_a_custom_mapper_with_a_topic_field_sees_every_tuple() -> None:
    h = Harness(topic=None, topic_field="topic", default_topic="fallback",
                tuple_mapper="test_kafka_bolt_units:Upper", tuple_mapper_args={"suffix": "?"})
    h.send("moo", "t1", fields=("w", "topic"))
    h.send("baa", None, fields=("w", "topic"))
    assert h.stub.records == [("t1", None, b"MOO?"), ("fallback", None, b"BAA?")]
    assert Upper().message(Tuple(["x"], "default", 1, "src", Fields(["w"]))) == "X"


def test_tick_tuples_are_acked_and_never_written() -> None:
    h = Harness()
    tick = Tuple([30], "__tick", -1, "__system", Fields(["rate_secs"]))
    other = Tuple([None, "m"], "__tick", 1, "src", Fields(["key", "message"]))  # not from the system
    h.bolt.execute_batch([tick, other])
    assert h.acked == [[30]] and h.stub.records == [("out", None, b"m")]


def _raw(tup: Tuple, fields: tuple[str, str]) -> tuple[str | None, Any, Any]:
    return "t", tup.value(fields[0]), tup.value(fields[1])


def _type_error(batch: ColumnBatch, topic: str | None) -> str:
    try:
        batch_records(batch, topic, True, ("key", "message"), _raw)
    except TypeError as exc:
        return str(exc)
    raise AssertionError("no TypeError")


def test_a_key_or_value_kafka_cannot_carry_is_refused_naming_which_it_is() -> None:
    for topic in ("out", None):  # the columns read directly, and each row through the mapper
        bad_key = _columns((b"k", "a"), ({"x": 1}, "b"))
        assert _type_error(bad_key, topic) == ("KafkaBolt: the key is a dict ({'x': 1}); map it to str, "
                                               "bytes, a number or None (tuple_mapper)")
        bad_value = _columns((b"k", b"a"), (b"k", [1, 2]))
        assert _type_error(bad_value, topic) == ("KafkaBolt: the message is a list ([1, 2]); map it to "
                                                 "str, bytes, a number or None (tuple_mapper)")
    h = Harness()
    failed: list[ColumnBatch] = []
    bolt: Any = h.bolt
    bolt.fail = failed.append
    batch = _columns(("k", "a"), ("k", {"x": 1}))
    h.bolt.execute_columns(batch)
    assert failed == [batch] and h.stub.records == []
    assert h.errors == ["KafkaBolt: batch of 2 tuples from src/default not written: KafkaBolt: the "
                        "message is a dict ({'x': 1}); map it to str, bytes, a number or None "
                        "(tuple_mapper)"]


class Keyed(TupleToKafkaMapper):
    """A custom mapper: the key is the first value reversed, the value the second upper-cased."""

    def key(self, tup: Tuple) -> Any:
        return tup.values[0][::-1]

    def message(self, tup: Tuple) -> Any:
        return tup.values[1].upper()


def test_a_custom_mapper_chooses_key_and_value_of_each_tuple() -> None:
    h = Harness(tuple_mapper=f"{__name__}:Keyed")
    h.send("abc", "moo", fields=("a", "b"))
    h.bolt.execute_columns(ColumnBatch([["xyz", "baa"]], "default", 1, "src", Fields(["a", "b"])))
    assert h.stub.records == [("out", b"cba", b"MOO"), ("out", b"zyx", b"BAA")]


def test_a_tuple_without_the_message_field_is_failed_with_the_mappers_message() -> None:
    h = Harness()
    h.send("k", fields=("key",))
    h.bolt.execute(Tuple(["k", "m"], "default", 1, "src", None))
    assert h.errors == [
        "KafkaBolt: tuple from src/default not written: \"KafkaBolt: tuple from src/default has no field "
        "'message' (KafkaBoltConfig.message_field; fields: ['key'])\"",
        "KafkaBolt: tuple from src/default not written: \"KafkaBolt: tuple from src/default has no field "
        "'message' (KafkaBoltConfig.message_field; fields: [])\""]
    assert h.failed == [["k"], ["k", "m"]] and h.bolt.metrics()["bad_tuples"] == 2
    h.bolt.execute_columns(ColumnBatch([["k"]], "default", 1, "src", Fields(["key"])))
    assert h.errors[-1] == (
        "KafkaBolt: batch of 1 tuples from src/default not written: \"KafkaBolt: batch from src/default "
        "has no field 'message' (KafkaBoltConfig.message_field; fields: ['key'])\"")


def test_a_key_or_value_of_a_tuple_kafka_cannot_carry_is_refused_naming_which_it_is() -> None:
    h = Harness()
    h.send({"x": 1}, "m")
    h.send("k", [1, 2])
    assert h.errors == [
        "KafkaBolt: tuple from src/default not written: KafkaBolt: the key is a dict ({'x': 1}); map it "
        "to str, bytes, a number or None (tuple_mapper)",
        "KafkaBolt: tuple from src/default not written: KafkaBolt: the message is a list ([1, 2]); map "
        "it to str, bytes, a number or None (tuple_mapper)"]


def test_one_execute_batch_goes_on_past_a_bad_tuple_and_a_tuple_without_a_topic() -> None:
    h = Harness(topic=None, topic_field="topic")
    fields = Fields(["topic", "key", "message"])
    tuples = [Tuple(v, "default", 1, "src", fields)
              for v in (["t", "k", {"bad": 1}], [None, "k", "skipped"], ["t", "k", "m"])]
    h.bolt.execute_batch(tuples)
    assert h.stub.records == [("t", b"k", b"m")]
    assert h.failed == [["t", "k", {"bad": 1}]] and h.acked == [[None, "k", "skipped"]]


def test_tuples_without_a_topic_are_counted_each() -> None:
    h = Harness(topic=None, topic_field="topic")
    h.send(None, "k", "a", fields=("topic", "key", "message"))
    h.send(None, "k", "b", fields=("topic", "key", "message"))
    h.bolt.execute_columns(ColumnBatch([[None, "k", "c"], [None, "k", "d"]], "default", 1, "src",
                                       Fields(["topic", "key", "message"])))
    assert h.bolt.metrics()["no_topic"] == 4
