// The report's drawing pieces: series thinned and smoothed, axis ticks, SVG charts, the bounds
// that keep a page small whatever the run wrote.
#include "core/report/page_parts.hpp"
#include "core/report/report_page.hpp"
#include "core/report/run_history.hpp"
#include "core/report/series.hpp"
#include "core/report/svg_chart.hpp"
#include "temp_folder.hpp"
#include "text_counts.hpp"

#include <doctest/doctest.h>

#include <string>
#include <vector>

using namespace troupe;

TEST_SUITE("report") {
  TEST_CASE("long series are thinned to bucket means, short ones kept; smoothing follows") {
    std::vector<chart_point> points;
    for (int i = 0; i < 10; ++i)
      points.push_back({double(i), double(i % 2)});
    CHECK(thinned(points, 20).size() == 10);
    const auto five = thinned(points, 5);
    REQUIRE(five.size() == 5);
    CHECK(five[0].x == 0.5);
    CHECK(five[0].y == 0.5);
    const auto s = smoothed(points);
    REQUIRE(s.size() == 10);
    CHECK(s[0].y == 0.0);  // debiased: starts at the first value
    std::vector<chart_point> flat(100, chart_point{0, 3.0});
    for (const auto& p : smoothed(flat))
      CHECK(p.y == doctest::Approx(3.0));
  }

  TEST_CASE("ticks are round numbers inside the range") {
    const auto t = nice_ticks(0.13, 2.4, 5);
    REQUIRE(!t.empty());
    CHECK(t.front() == doctest::Approx(0.5));
    CHECK(t.back() == doctest::Approx(2.0));
    CHECK(nice_ticks(1, 1, 5).empty());
  }

  TEST_CASE("an SVG line chart states and draws each series' points, skipping non-finite ones") {
    line_chart c{"loss", "Loss <&>",  "step", "loss", {}, {{1.5, "checkpoint \"a\""}},
                 false,  std::nullopt};
    c.series.push_back({"train", {{0, 1}, {1, NAN}, {2, 0.5}}, "", false, true});
    const auto svg = render_svg(c);
    CHECK(svg.find("data-chart=\"loss\"") != std::string::npos);
    CHECK(svg.find("data-points=\"2\"") != std::string::npos);
    CHECK(count_of(svg, "<circle") == 2);
    CHECK(svg.find("Loss &lt;&amp;&gt;") != std::string::npos);
    CHECK(svg.find("checkpoint &quot;a&quot;") != std::string::npos);
    CHECK(svg.find("nan") == std::string::npos);
    bar_chart b{"workers", "Workers", "s", {{"worker 0", {{"compute", 1}, {"comm", 0.5}}}}};
    CHECK(count_of(render_svg(b), "class=\"bar\"") == 2);
    for (int w = 1; w < 1000; ++w)
      b.rows.push_back(b.rows.front());
    const auto many = render_svg(b);
    CHECK(count_of(many, "class=\"bar\"") == 2 * int(max_bar_rows));
    CHECK(many.find("936 more rows not drawn") != std::string::npos);
  }

  // Found probing as a hostile user: losses of ±1e308 in a hand-edited metrics.jsonl drew
  // cy="-nan" (their span is past double's range).
  TEST_CASE("values at the ends of double's range still have positions") {
    line_chart c{"loss", "Loss", "step", "loss", {}, {}, false, std::nullopt};
    c.series.push_back({"train", {{0, 1e308}, {1, -1e308}, {2, 0.5}}, "", false, true});
    const auto svg = render_svg(c);
    CHECK(svg.find("nan") == std::string::npos);
    CHECK(svg.find("inf") == std::string::npos);
    CHECK(count_of(svg, "<circle") == 3);
  }

  TEST_CASE("a long text is cut between characters, and many events are listed up to a bound") {
    std::string text = "a";
    for (int i = 0; i < 3000; ++i)
      text += "\xc3\xa9";  // é, two bytes each
    const auto cut = echo(text, 4096);
    CHECK(cut.find("(1906 more bytes)") != std::string::npos);
    // Every byte before the note is whole UTF-8: é's two bytes together.
    const auto body = cut.substr(0, cut.find(" \xe2\x80\xa6"));
    CHECK(body.size() % 2 == 1);
    temp_folder f;
    std::string metrics;
    for (int s = 0; s < 3000; ++s)
      metrics += nlohmann::json{{"event", "checkpoint"},
                                {"step", s},
                                {"bytes", 10},
                                {"seconds", 0.1},
                                {"t", s * 0.01}}
                     .dump() +
                 "\n";
    f.write("metrics.jsonl", metrics);
    const auto page = render_run_page(read_run_history(f.path.string()), {});
    CHECK(page.find("… and 2000 more events") != std::string::npos);
    CHECK(count_of(page, "class=\"marker\"") <= 1000 * 4);
  }

  TEST_CASE("a y_limit clips a runaway series to the top edge; the others keep the axis") {
    line_chart c{"suite_loss", "Loss", "step", "loss", {}, {}, true, std::nullopt};
    c.series.push_back({"calm", {{0, 2.0}, {1, 1.0}}, "", false, false});
    c.series.push_back({"wild (diverged)", {{0, 2.0}, {1, 70.0}}, "", false, false});
    const auto unclipped = render_svg(c);
    c.y_limit = 2.2;
    const auto clipped = render_svg(c);
    CHECK(unclipped.find(">60<") != std::string::npos);  // a tick for the runaway's range
    CHECK(clipped.find(">60<") == std::string::npos);
    CHECK(clipped.find("data-series=\"wild (diverged)\" data-points=\"2\"") != std::string::npos);
  }
}
