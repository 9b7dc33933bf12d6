"""JoinBolt: Storm's JoinBolt test cases (inner, left, three streams, stream-qualified and nested
selections) on one hand-made window, with expected rows spelled out; the configurations refused
when the bolt is added to the builder or the topology is created, each error naming the
component and what is wrong."""

from __future__ import annotations

from typing import Any

import pytest

from stormpy.testing import FeederSpout
from stormpy.testing._unit import RecordingCollector, test_tuple
from stormpy.topology import InvalidTopologyError, TopologyBuilder, Tuple
from stormpy.windowing import Count, Duration, JoinBolt
from stormpy.windowing._join import JoinWindowBolt
from stormpy.windowing._manager import Event, Window

USER_FIELDS = ["userId", "name", "city"]
USERS = [[1, "roshan", "san jose"], [2, "harsha", "santa clara"], [3, "siva", "dublin"],
         [4, "hugo", "san mateo"], [5, "suresh", "sunnyvale"], [6, "guru", "palo alto"],
         [7, "arun", "bengaluru"], [8, "satish", "mumbai"], [9, "mani", "bengaluru"],
         [10, "priyank", "seattle"]]
ORDER_FIELDS = ["orderId", "userId", "itemId", "price"]
ORDERS = [[11, 2, 21, 7], [12, 2, 22, 3], [13, 3, 23, 4], [14, 4, 24, 5], [15, 5, 25, 2],
          [16, 6, 26, 7], [17, 6, 27, 4], [18, 7, 28, 2], [19, 8, 29, 9]]
STORE_FIELDS = ["storeId", "storeName", "city"]
STORES = [[1, "store1", "san jose"], [2, "store2", "santa clara"], [3, "store3", "dublin"],
          [4, "store4", "san mateo"], [5, "store5", "bengaluru"]]
CITY_FIELDS = ["cityId", "cityName", "country"]
CITIES = [[1, "san jose", "US"], [2, "santa clara", "US"], [3, "dublin", "US"],
          [4, "san mateo", "US"], [5, "sunnyvale", "US"], [6, "palo alto", "US"],
          [7, "bengaluru", "India"], [8, "mumbai", "India"], [9, "chennai", "India"]]


def stream(name: str, fields: list[str], rows: list[list[Any]]) -> list[Tuple]:
    return [test_tuple(row, component="src", stream=name, fields=fields) for row in rows]


def window(*streams: list[Tuple]) -> Window:
    tuples = [t for s in streams for t in s]
    return Window([Event(0, i, t) for i, t in enumerate(tuples)], 0, len(tuples), [], [], None, 0)


def joined(bolt: JoinBolt, *streams: list[Tuple]) -> tuple[list[list[Any]], RecordingCollector]:
    collector = RecordingCollector()
    doc = bolt.component_kwargs["join"]
    runtime = collector.prepare(JoinWindowBolt(join=doc), kwargs={"join": doc})
    runtime.execute(window(*streams))
    return [e.values for e in collector.emitted], collector


def by_stream(selector_stream: str, key: str) -> JoinBolt:
    return JoinBolt(selector_stream, key, selector="stream")


def test_trivial_one_stream_projects_every_tuple() -> None:
    orders = stream("orders", ORDER_FIELDS, ORDERS)
    rows, _ = joined(by_stream("orders", "orderId").select("orderId,userId,itemId,price"), orders)
    assert rows == ORDERS


def test_nested_keys_and_fields() -> None:
    users = [test_tuple([dict(zip(USER_FIELDS, u))], stream="users", fields=["outer"])
             for u in USERS]
    rows, _ = joined(by_stream("users", "outer.userId").select("outer.name, outer.city"), users)
    assert rows == [[u[1], u[2]] for u in USERS]


def test_missing_nested_fields_are_none_and_a_missing_key_never_matches() -> None:
    users = [test_tuple([{"userId": 1, "name": "a"}], stream="users", fields=["outer"]),
             test_tuple([{"name": "no id"}], stream="users", fields=["outer"]),
             test_tuple(["not a map"], stream="users", fields=["outer"])]
    orders = [test_tuple([{"userId": 1, "price": 5}], stream="orders", fields=["o"]),
              test_tuple([{"price": 6}], stream="orders", fields=["o"])]
    rows, _ = joined(by_stream("users", "outer.userId").select("outer.name, outer.x.y"), users)
    assert rows == [["a", None], ["no id", None], [None, None]]
    inner = by_stream("users", "outer.userId").join("orders", "o.userId", "users")
    rows, _ = joined(inner.select("outer.name, o.price"), users, orders)
    assert rows == [["a", 5]]
    left = by_stream("users", "outer.userId").left_join("orders", "o.userId", "users")
    rows, _ = joined(left.select("outer.name, o.price"), users, orders)
    # SQL's left join keeps rows whose key is missing; Storm would drop the last two
    assert rows == [["a", 5], ["no id", None], [None, None]]


def test_projection_with_stream_qualified_fields() -> None:
    users, stores = stream("users", USER_FIELDS, USERS), stream("stores", STORE_FIELDS, STORES)
    bolt = (by_stream("users", "city").join("stores", "city", "users")
            .select("userId,name,storeName,users:city,stores:city"))
    rows, collector = joined(bolt, stores, users)
    assert len(rows) == len(STORES) + 1  # two users in bengaluru
    assert all(len(r) == 5 and None not in r for r in rows)
    assert [7, "arun", "store5", "bengaluru", "bengaluru"] in rows
    assert collector._streams is not None
    assert list(collector._streams["default"].fields) == [
        "userId", "name", "storeName", "users:city", "stores:city"]


def test_inner_join() -> None:
    users, orders = stream("users", USER_FIELDS, USERS), stream("orders", ORDER_FIELDS, ORDERS)
    bolt = by_stream("users", "userId").join("orders", "userId", "users").select("userId,name,price")
    rows, collector = joined(bolt, orders, users)
    names = {u[0]: u[1] for u in USERS}
    assert sorted(rows) == sorted([o[1], names[o[1]], o[3]] for o in ORDERS)
    # each row is anchored to exactly the two tuples it joins (Storm's explicit anchoring)
    assert all(len(e.anchors) == 2 for e in collector.emitted)
    first = collector.emitted[0]
    assert {a.stream for a in first.anchors} == {"users", "orders"}


def test_left_join() -> None:
    users, orders = stream("users", USER_FIELDS, USERS), stream("orders", ORDER_FIELDS, ORDERS)
    bolt = (by_stream("users", "userId").left_join("orders", "userId", "users")
            .select("userId,name,price"))
    rows, collector = joined(bolt, orders, users)
    assert len(rows) == 12  # 9 orders (users 2 and 6 have two) + users 1, 9, 10 without any
    assert sorted(r for r in rows if r[2] is None) == [[1, "roshan", None], [9, "mani", None],
                                                      [10, "priyank", None]]
    unmatched = [e for e in collector.emitted if e.values[2] is None]
    assert all(len(e.anchors) == 1 for e in unmatched)  # only the user tuple


def three_streams() -> tuple[list[Tuple], list[Tuple], list[Tuple]]:
    return (stream("users", USER_FIELDS, USERS), stream("stores", STORE_FIELDS, STORES),
            stream("cities", CITY_FIELDS, CITIES))


def test_three_stream_inner_join() -> None:
    users, stores, cities = three_streams()
    bolt = (by_stream("users", "city").join("stores", "city", "users")
            .join("cities", "cityName", "stores").select("name,storeName,city,country"))
    rows, _ = joined(bolt, users, stores, cities)
    assert sorted(rows) == sorted([
        ["roshan", "store1", "san jose", "US"], ["harsha", "store2", "santa clara", "US"],
        ["siva", "store3", "dublin", "US"], ["hugo", "store4", "san mateo", "US"],
        ["arun", "store5", "bengaluru", "India"], ["mani", "store5", "bengaluru", "India"]])


def test_three_stream_left_joins_against_the_first_stream() -> None:
    users, stores, cities = three_streams()
    bolt = (by_stream("users", "city").left_join("stores", "city", "users")
            .left_join("cities", "cityName", "users").select("name,storeName,city,country"))
    rows, _ = joined(bolt, users, cities, stores)
    assert len(rows) == len(USERS)
    assert ["priyank", None, "seattle", None] in rows  # no store, no city
    assert ["satish", None, "mumbai", "India"] in rows  # a city, no store


def test_three_stream_left_joins_in_a_chain() -> None:
    users, stores, cities = three_streams()
    bolt = (by_stream("users", "city").left_join("stores", "city", "users")
            .left_join("cities", "cityName", "stores").select("name,storeName,city,country"))
    rows, _ = joined(bolt, users, cities, stores)
    # Storm gets stores + 1 = 6 here: it drops a row whose join key is null (users without a
    # store), where a SQL left join keeps every user
    assert len(rows) == len(USERS)
    assert sum(1 for r in rows if r[1] is not None) == len(STORES) + 1
    assert ["satish", None, "mumbai", None] in rows  # the city joins the (missing) store


def test_three_stream_mixed_join() -> None:
    users, stores, cities = three_streams()
    bolt = (by_stream("users", "city").join("stores", "city", "users")
            .left_join("cities", "cityName", "users").select("name,storeName,city,country"))
    rows, _ = joined(bolt, users, cities, stores)
    assert len(rows) == len(STORES) + 1  # two users in bengaluru


def test_source_selector_names_streams_by_component_and_keys_may_be_lists() -> None:
    a = [test_tuple([[1, 2], "x"], component="left", fields=["k", "v"])]
    b = [test_tuple([[1, 2], "y"], component="right", fields=["key", "w"]),
         test_tuple([[1, 3], "z"], component="right", fields=["key", "w"])]
    rows, _ = joined(JoinBolt("left", "k").join("right", "key", "left").select("v, w"), a, b)
    assert rows == [["x", "y"]]


# -- refused configurations ---------------------------------------------------------------------
BASE = JoinBolt("users", "userId").with_tumbling_window(Count(10))


@pytest.mark.parametrize(("bolt", "message"), [
    (JoinBolt("users", "userId").select("name"), "window: a JoinBolt needs with_window"),
    (BASE, "select: a JoinBolt needs select"),
    (BASE.join("orders", "userId", "users").select("name, name"),
     "select: output field 'name' is selected twice"),
    (BASE.join("orders", "userId", "users").select("users:name, users:name"),
     "'users:name' is selected twice"),
    (BASE.join("orders", "userId", "users").select("name, shops:name"),
     "names stream 'shops', which is not joined"),
    (BASE.join("orders", "userId", "shops").select("name"),
     "the prior stream 'shops' was not joined before"),
    (BASE.join("orders", "userId", "users").join("orders", "userId", "users").select("name"),
     "'orders' is already part of the join"),
    (BASE.join("orders", "users:userId", "users").select("name"), "takes no 'stream:' qualifier"),
    (BASE.select("name,,price"), "a field name must be a non-empty string"),
    (BASE.select("name, a..b"), "is not a field"),
    (JoinBolt("users", "userId", selector="component").with_tumbling_window(Count(2))
     .select("name"), "selector: must be 'source' or 'stream'"),
    (BASE.select("name").with_window(Count(2), Count(3)), "sliding interval: Count(3) is larger"),
    (BASE.select("name").with_lag(Duration(seconds=1)), "lag: needs event time"),
    (BASE.select("name").with_timestamp_field("ts").with_late_tuple_stream("default"),
     "also declared"),
])
def test_refused_when_added_naming_the_component(bolt: JoinBolt, message: str) -> None:
    b = TopologyBuilder()
    with pytest.raises(InvalidTopologyError) as err:
        b.set_bolt("joiner", bolt)
    assert "'joiner'" in str(err.value) and message in str(err.value), str(err.value)


def topology_with(bolt: JoinBolt, subscribe: list[tuple[str, str]]) -> TopologyBuilder:
    b = TopologyBuilder()
    b.set_spout("users", FeederSpout(USER_FIELDS + ["ts"]))
    b.set_spout("orders", FeederSpout(ORDER_FIELDS, streams={"big": ORDER_FIELDS + ["ts"]}))
    d = b.set_bolt("joiner", bolt)
    for component, stream_id in subscribe:
        d.shuffle_grouping(component, stream_id)
    return b


BOTH = [("users", "default"), ("orders", "default")]


@pytest.mark.parametrize(("bolt", "subscribe", "message"), [
    (BASE.join("orders", "userId", "users").select("name"), [("users", "default")],
     "joined source 'orders' is not one of its inputs"),
    (BASE.select("name"), BOTH, "subscribes to orders/default, but source 'orders' is not part"),
    (JoinBolt("users", "city").with_tumbling_window(Count(2)).join("orders", "city", "users")
     .select("name"), BOTH, "key 'city' of joined stream 'orders' is not a field of orders/default"),
    (BASE.join("orders", "userId", "users").select("name, orders:name"), BOTH,
     "selected field 'name' of joined stream 'orders' is not a field of orders/default"),
    (BASE.join("orders", "userId", "users").select("name, colour"), BOTH,
     "selected field 'colour' is a field of no joined stream"),
    (BASE.join("orders", "userId", "users").select("name").with_timestamp_field("ts"), BOTH,
     "timestamp field 'ts' of joined stream 'orders' is not a field of orders/default"),
    (JoinBolt("default", "userId", selector="stream").with_tumbling_window(Count(2))
     .join("big", "userId", "default").select("name"), [("users", "default")],
     "joined stream 'big' is not one of its inputs"),
])
def test_refused_against_the_inputs_when_the_topology_is_created(
        bolt: JoinBolt, subscribe: list[tuple[str, str]], message: str) -> None:
    b = topology_with(bolt, subscribe)
    with pytest.raises(InvalidTopologyError) as err:
        b.create_topology()
    assert "'joiner'" in str(err.value) and message in str(err.value), str(err.value)


def test_a_valid_join_builds_with_its_output_stream_and_window_config() -> None:
    bolt = (JoinBolt("users", "userId").join("orders", "userId", "users")
            .select("userId, name, orders:price").with_output_stream("joined")
            .with_window(Duration(seconds=10), Duration(seconds=5)).with_timestamp_field("ts"))
    b = TopologyBuilder()
    b.set_spout("users", FeederSpout(USER_FIELDS + ["ts"]))
    b.set_spout("orders", FeederSpout(ORDER_FIELDS + ["ts"]))
    b.set_bolt("joiner", bolt).fields_grouping("users", "userId").fields_grouping("orders",
                                                                                  "userId")
    spec = b.create_topology()
    streams = spec.components["joiner"].streams
    assert list(streams) == ["joined"]
    assert list(streams["joined"].fields) == ["userId", "name", "orders:price"]
    # the windowed executor's own config: ticks for the watermark, a long enough timeout
    assert spec.components["joiner"].config["topology.tick.tuple.freq.secs"] > 0
    # every builder method returned a new JoinBolt: the first one is untouched
    assert bolt.select("x").to_doc()["select"] == ["x"] and bolt.to_doc()["select"] != ["x"]
