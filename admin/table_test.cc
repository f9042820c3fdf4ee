#include "admin/table.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"

namespace rangefs {
namespace admin {
namespace {

using ::testing::HasSubstr;

TEST(TableTest, JsonGivesNumbersAndBytesAsNumbers) {
  Table t;
  t.columns = {"node", "free", "inflight", "read"};
  t.AddRow({"n1", Cell::Bytes(78490000000), Cell::Int(3), Cell::Null()});
  EXPECT_THAT(FormatHuman(t), HasSubstr("73.1 GiB"));
  auto doc = nlohmann::json::parse(FormatJson(t));
  ASSERT_TRUE(doc.is_array());
  const auto& row = doc.at(0);
  EXPECT_TRUE(row.at("node").is_string());
  ASSERT_TRUE(row.at("free").is_number_integer()) << row.dump();
  EXPECT_EQ(row.at("free").get<uint64_t>(), 78490000000u);
  EXPECT_EQ(row.at("inflight").get<int>(), 3);
  EXPECT_TRUE(row.at("read").is_null());
}

TEST(TableTest, ColumnsAlignByDisplayWidth) {
  EXPECT_EQ(DisplayWidth("abc"), 3u);
  EXPECT_EQ(DisplayWidth("données"), 7u);    // é: 2 bytes, 1 column
  EXPECT_EQ(DisplayWidth("数据"), 4u);       // wide: 2 columns each
  EXPECT_EQ(DisplayWidth("e\xcc\x81"), 1u);  // e + combining acute
  Table t;
  t.columns = {"path", "size"};
  t.AddRow({"/données.csv", Cell::Int(1)});
  t.AddRow({"/数据.csv", Cell::Int(22)});
  t.AddRow({"/plain.csv", Cell::Int(333)});
  // The size column starts at the same display column on every line.
  std::string human = FormatHuman(t);
  size_t start = 0;
  std::vector<size_t> columns;
  while (start < human.size()) {
    size_t end = human.find('\n', start);
    std::string line = human.substr(start, end - start);
    size_t last_gap = line.rfind("  ");
    ASSERT_NE(last_gap, std::string::npos) << line;
    columns.push_back(DisplayWidth(line.substr(0, last_gap + 2)));
    start = end + 1;
  }
  ASSERT_EQ(columns.size(), 4u);
  for (size_t c : columns) EXPECT_EQ(c, columns[0]) << human;
}

}  // namespace
}  // namespace admin
}  // namespace rangefs
