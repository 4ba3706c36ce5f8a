// JsonReader: tokens across buffer boundaries (a stream that hands out one
// byte at a time), escapes, numbers, the path and byte offset of errors, and
// the limits.
#include <string>

#include <google/protobuf/io/zero_copy_stream_impl_lite.h>

#include <catch2/catch.hpp>

#include "import/json_reader.h"
#include "import/value_tree.h"

namespace swapplan::import_internal {
namespace {

namespace pbio = google::protobuf::io;

// Reads `text` with the reader, `block` bytes per stream buffer.
struct Reader {
  Reader(const std::string& text, int block, JsonLimits limits = {})
      : data(text), in(data.data(), static_cast<int>(data.size()), block), r(&in, "t.json", limits) {}
  std::string data;
  pbio::ArrayInputStream in;
  JsonReader r;
};

TEST_CASE("JsonReader reads objects, arrays and scalars across one-byte buffers") {
  for (int block : {1, 3, 1 << 20}) {
    Reader x(R"( {"a": [1, -2, 3.5, "x\"y\u00e9", true, false, null], "b": {"c": 9}} )", block);
    JsonReader& r = x.r;
    REQUIRE(r.BeginObject());
    absl::string_view key;
    REQUIRE(r.NextKey(&key));
    CHECK(key == "a");
    REQUIRE(r.BeginArray());
    int64_t i = 0;
    REQUIRE(r.NextElement());
    REQUIRE(r.ReadInt64(&i));
    CHECK(i == 1);
    REQUIRE(r.NextElement());
    REQUIRE(r.ReadInt64(&i));
    CHECK(i == -2);
    REQUIRE(r.NextElement());
    double d = 0;
    REQUIRE(r.ReadDouble(&d));
    CHECK(d == 3.5);
    REQUIRE(r.NextElement());
    absl::string_view s;
    REQUIRE(r.ReadString(&s));
    CHECK(s == "x\"y\xC3\xA9");  // \u00e9 is é, two bytes of UTF-8
    REQUIRE(r.NextElement());
    bool b = false;
    REQUIRE(r.ReadBool(&b));
    CHECK(b);
    REQUIRE(r.NextElement());
    REQUIRE(r.ReadBool(&b));
    CHECK_FALSE(b);
    REQUIRE(r.NextElement());
    CHECK(r.Peek() == JsonKind::kNull);
    REQUIRE(r.Skip());
    CHECK_FALSE(r.NextElement());
    REQUIRE(r.NextKey(&key));
    CHECK(key == "b");
    REQUIRE(r.Skip());
    CHECK_FALSE(r.NextKey(&key));
    CHECK(r.AtEndOfInput());
    CHECK(r.ok());
  }
}

TEST_CASE("JsonReader: integers at the int64 limits and beyond") {
  Reader x("[9223372036854775807, -9223372036854775808, 9223372036854775808, 1e400]", 2);
  JsonReader& r = x.r;
  REQUIRE(r.BeginArray());
  JsonNumber n;
  REQUIRE(r.NextElement());
  REQUIRE(r.ReadNumber(&n));
  CHECK(n.is_int);
  CHECK(n.int_value == INT64_MAX);
  REQUIRE(r.NextElement());
  REQUIRE(r.ReadNumber(&n));
  CHECK(n.int_value == INT64_MIN);
  REQUIRE(r.NextElement());
  REQUIRE(r.ReadNumber(&n));
  CHECK_FALSE(n.is_int);  // one past INT64_MAX: a double
  REQUIRE(r.NextElement());
  REQUIRE(r.ReadNumber(&n));
  CHECK(std::isinf(n.ToDouble()));  // overflows a double: infinity, not an exception
}

TEST_CASE("JsonReader errors name the byte offset, the JSON path and the rule") {
  SECTION("syntax") {
    Reader x(R"({"nodes": [{"id": 1}, {"id": 2,}]})", 4);
    JsonReader& r = x.r;
    REQUIRE(r.BeginObject());
    absl::string_view key;
    REQUIRE(r.NextKey(&key));
    CHECK_FALSE(r.Skip());
    // {"nodes": [{"id": 1}, {"id": 2,} : the '}' after the comma is byte 31.
    CHECK(std::string(r.status().message()) ==
          "t.json: byte 31, at $.nodes[1].id: expected a key string [json-syntax]");
  }
  SECTION("type") {
    Reader x(R"({"a": [1, "two"]})", 1);
    JsonReader& r = x.r;
    REQUIRE(r.BeginObject());
    absl::string_view key;
    REQUIRE(r.NextKey(&key));
    REQUIRE(r.BeginArray());
    int64_t v = 0;
    REQUIRE(r.NextElement());
    REQUIRE(r.ReadInt64(&v));
    REQUIRE(r.NextElement());
    CHECK_FALSE(r.ReadInt64(&v));
    CHECK(std::string(r.status().message()) ==
          "t.json: byte 10, at $.a[1]: expected a number [json-schema]");
  }
  SECTION("truncated") {
    Reader x(R"({"a": "unterminated)", 5);
    JsonReader& r = x.r;
    REQUIRE(r.BeginObject());
    absl::string_view key;
    REQUIRE(r.NextKey(&key));
    CHECK_FALSE(r.Skip());
    CHECK(std::string(r.status().message()).find("unterminated string [json-syntax]") !=
          std::string::npos);
  }
}

TEST_CASE("JsonReader limits: depth and token length") {
  JsonLimits limits;
  limits.max_depth = 4;
  limits.max_token_bytes = 8;
  Reader deep("[[[[[1]]]]]", 1, limits);
  CHECK_FALSE(deep.r.Skip());
  CHECK(std::string(deep.r.status().message()).find("nesting deeper than 4 levels [json-limit]") !=
        std::string::npos);
  Reader longs(R"(["0123456789abcdef"])", 1, limits);
  CHECK_FALSE(longs.r.Skip());
  CHECK(std::string(longs.r.status().message()).find("string longer than 8 bytes [json-limit]") !=
        std::string::npos);
}

TEST_CASE("ValueTree::ParseJson keeps the document and refuses past its budget") {
  Reader x(R"({"k": [1, 2.5, "s", null, {"z": true}]})", 2);
  ValueTree t;
  uint32_t root = t.ParseJson(x.r);
  REQUIRE(root != kNoValue);
  uint32_t k = t.Lookup(root, "k");
  REQUIRE(t.Items(k).size() == 5);
  int64_t one = 0;
  CHECK(t.AsInt(t.Items(k)[0], &one));
  CHECK(one == 1);
  CHECK(t.Str(t.Items(k)[2]) == "s");
  CHECK(t.Kind(t.Items(k)[3]) == ValueKind::kNone);

  Reader y("[1, 2, 3, 4, 5]", 1 << 10);
  ValueTree small(3);  // the list and two numbers
  CHECK(small.ParseJson(y.r) == kNoValue);
  CHECK(std::string(y.r.status().message()).find("[json-limit]") != std::string::npos);
}

}  // namespace
}  // namespace swapplan::import_internal
