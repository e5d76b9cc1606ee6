package reports

import (
	"bytes"
	"image"
	"image/png"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/idemcheck/idemcheck/checks"
	"github.com/idemcheck/idemcheck/internal/testenv"
	"github.com/idemcheck/idemcheck/measure"
)

var remoteRef = regexp.MustCompile(`(?i)\b(src|href|xlink:href|action|poster|data)\s*=\s*["']?\s*(https?:|//)`)

// TestHTMLSelfContained: the page loads nothing from anywhere, runs no
// script, and draws the two load charts per scenario and a timeline per
// failing key shown.
func TestHTMLSelfContained(t *testing.T) {
	small, big := fixture(t), loadFixture(t)
	if big.Result != checks.NotMet || len(failing(big)) != 1 {
		t.Fatalf("load fixture: result %s, verdicts %+v; want exactly_once failed", big.Result, big.Verdicts)
	}
	var buf bytes.Buffer
	if err := WriteHTML(&buf, []*Summary{small, big}); err != nil {
		t.Fatal(err)
	}
	page := buf.String()
	if m := remoteRef.FindString(page); m != "" {
		t.Errorf("HTML report refers to the network: %q", m)
	}
	for _, banned := range []string{"<script", "<link", "<img", "<iframe", "@import", "url("} {
		if strings.Contains(strings.ToLower(page), banned) {
			t.Errorf("HTML report holds %q: it must be one self-contained file", banned)
		}
	}
	want := map[string]int{
		`class="chart latency-chart"`:      2,
		`class="chart distribution-chart"`: 2,
		// 1 key in the small fixture, the first htmlExamples in the big one
		`class="chart timeline-chart"`: 1 + htmlExamples,
	}
	for s, n := range want {
		if got := strings.Count(page, s); got != n {
			t.Errorf("HTML report has %d %s, want %d", got, s, n)
		}
	}
	for _, s := range []string{"2 of 2 scenarios failed", "seed <code>7</code>", "key nonce <code>99</code>", "p99 latency 53 ms, limit 40 ms", "key <code>k1</code>"} {
		if !strings.Contains(page, s) {
			t.Errorf("HTML report does not say %q", s)
		}
	}
	if strings.Contains(page, "No load charts") {
		t.Error("HTML report of summaries built from a history says it has no charts")
	}
}

// TestHTMLEscapes: names, keys and answers are text, never markup.
func TestHTMLEscapes(t *testing.T) {
	s := fixture(t)
	s.Scenario.Name = `<b>bold</b> | "x"`
	s.Verdicts[0].Examples[0].Key = `<script>alert(1)</script>`
	var buf bytes.Buffer
	if err := WriteHTML(&buf, []*Summary{s}); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(buf.String(), "<b>bold") || strings.Contains(buf.String(), "<script>") {
		t.Errorf("HTML report let markup through:\n%s", buf.String())
	}
}

// TestHTMLFromJSON: a summary read back from report.json has no history
// to draw: the page says so and still shows verdicts and evidence.
func TestHTMLFromJSON(t *testing.T) {
	var js bytes.Buffer
	if err := WriteJSON(&js, []*Summary{fixture(t)}); err != nil {
		t.Fatal(err)
	}
	back := readJSON(t, &js)
	var buf bytes.Buffer
	if err := WriteHTML(&buf, []*Summary{back}); err != nil {
		t.Fatal(err)
	}
	page := buf.String()
	if !strings.Contains(page, "No load charts") || strings.Contains(page, "latency-chart") || !strings.Contains(page, "timeline-chart") {
		t.Errorf("HTML from report.json: want no load charts, a note saying why, and the evidence timeline")
	}
}

// TestChartsOf checks what the charts are drawn from on the load fixture.
func TestChartsOf(t *testing.T) {
	c := loadFixture(t).Charts
	if c == nil || len(c.Buckets) < measure.Columns/2 {
		t.Fatalf("charts: %+v; want a bucket in most columns", c)
	}
	if got, want := strings.Join(c.FaultKinds, ","), "delay,drop_ack,duplicate,reset,timeout"; got != want {
		t.Errorf("FaultKinds = %s, want %s", got, want)
	}
	n := 0
	for _, f := range c.Faults {
		n += f.Count
	}
	if n < 100 {
		t.Errorf("%d faults marked, want every one of the ~125 injected", n)
	}
	// slow between 4 and 5 s: the p50 there is well above the p50 before
	var slow, fast time.Duration
	for _, b := range c.Buckets {
		switch {
		case b.Column > measure.Columns*42/100 && b.Column < measure.Columns*48/100:
			slow = max(slow, b.P50)
		case b.Column < measure.Columns*30/100:
			fast = max(fast, b.P50)
		}
	}
	if slow < fast+20*time.Millisecond {
		t.Errorf("p50 in the slow second %.1f ms, before %.1f ms; want the 40 ms stall to show", measure.MS(slow), measure.MS(fast))
	}
	if c.Clean.Count == 0 || c.Faulted.Count == 0 || len(c.Clean.Points) < 60 {
		t.Errorf("distributions: clean n=%d (%d points), faulted n=%d", c.Clean.Count, len(c.Clean.Points), c.Faulted.Count)
	}
}

// TestHTMLChartsDrawn renders each chart in headless Chromium and looks
// for its marks' colours on the screenshot; the same charts without data
// must show none of them, so the check can fail.
func TestHTMLChartsDrawn(t *testing.T) {
	testenv.SkipUnlessLong(t)
	chromium := tool(t, "chromium", "chromium", "chromium-browser")
	big := loadFixture(t)
	ex := failing(big)[0].Examples[0]
	for _, ex2 := range failing(big)[0].Examples {
		if len(ex2.Attempts) > len(ex.Attempts) {
			ex = ex2
		}
	}
	empty := &measure.Charts{}
	cases := []struct {
		name   string
		svg    string
		want   map[string]string // colour → what it draws
		absent bool              // the no-data control: none of want drawn
	}{
		{"latency", LatencyChart(big.Charts), map[string]string{colP50: "p50 line", colP99: "p99 line", faultColour("drop_ack"): "drop_ack marks", faultColour("duplicate"): "duplicate marks", faultColour("reset"): "reset marks"}, false},
		{"latency-empty", LatencyChart(empty), map[string]string{colP50: "p50 line", colP99: "p99 line"}, true},
		{"distribution", DistributionChart(big.Charts), map[string]string{colClean: "clean line", colFaulted: "faulted line"}, false},
		{"distribution-empty", DistributionChart(empty), map[string]string{colClean: "clean line", colFaulted: "faulted line"}, true},
		{"timeline", TimelineChart(ex), map[string]string{colOK: "2xx bar", colInfo: "indeterminate bar"}, false},
	}
	dir := t.TempDir()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			page := filepath.Join(dir, c.name+".html")
			html := `<!DOCTYPE html><html><head><meta charset="utf-8"><style>body{margin:0;background:#fff;font-family:sans-serif}</style></head><body>` + c.svg + `</body></html>`
			if err := os.WriteFile(page, []byte(html), 0o644); err != nil {
				t.Fatal(err)
			}
			img := decodePNG(t, screenshot(t, chromium, page, 900, 500))
			for colour, what := range c.want {
				n := countColour(img, colour)
				switch {
				case c.absent && n > 0:
					t.Errorf("%s without data: %d pixels of %s (%s), want none", c.name, n, colour, what)
				case !c.absent && n < 40:
					t.Errorf("%s: %d pixels of %s, want the %s drawn", c.name, n, colour, what)
				}
			}
		})
	}
	t.Run("report", func(t *testing.T) {
		page := filepath.Join(dir, "report.html")
		var buf bytes.Buffer
		if err := WriteHTML(&buf, []*Summary{fixture(t), big}); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(page, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		img := decodePNG(t, screenshot(t, chromium, page, 1000, 6000))
		for colour, what := range map[string]string{colP50: "latency lines", colFaulted: "faulted distribution", colInfo: "timelines"} {
			if n := countColour(img, colour); n < 100 {
				t.Errorf("whole report: %d pixels of %s, want the %s drawn", n, colour, what)
			}
		}
	})
}

func decodePNG(t *testing.T, path string) image.Image {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatal(err)
	}
	return img
}

// countColour counts the pixels within a small distance of #rrggbb, so
// anti-aliased edges do not matter and neighbouring hues do not count.
func countColour(img image.Image, hex string) int {
	v, _ := strconv.ParseUint(strings.TrimPrefix(hex, "#"), 16, 32)
	wr, wg, wb := int(v>>16&0xff), int(v>>8&0xff), int(v&0xff)
	n := 0
	b := img.Bounds()
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			r, g, bl, _ := img.At(x, y).RGBA()
			dr, dg, db := int(r>>8)-wr, int(g>>8)-wg, int(bl>>8)-wb
			if dr*dr+dg*dg+db*db <= 12*12 {
				n++
			}
		}
	}
	return n
}
