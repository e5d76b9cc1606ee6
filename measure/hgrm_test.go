package measure

import (
	"bufio"
	"bytes"
	"io"
	"math"
	"strconv"
	"strings"
	"testing"
	"time"
)

// hgrmLine is one line of a percentile distribution: a value in ms, its
// percentile (0..1) and the count up to it.
type hgrmLine struct {
	ms, percentile float64
	count          int64
}

// readHGRM reads a percentile distribution back as a plotter does: its
// lines of four columns under the header, and the total count of its
// footer.
func readHGRM(t *testing.T, r io.Reader) ([]hgrmLine, int64) {
	t.Helper()
	var lines []hgrmLine
	total := int64(-1)
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		switch {
		case len(f) == 0, f[0] == "Value":
		case strings.HasPrefix(f[0], "#[Max"):
			n, err := strconv.ParseInt(strings.TrimSuffix(f[len(f)-1], "]"), 10, 64)
			if err != nil {
				t.Fatalf("footer %q: %v", sc.Text(), err)
			}
			total = n
		case strings.HasPrefix(f[0], "#"):
		case len(f) == 4:
			v, err1 := strconv.ParseFloat(f[0], 64)
			p, err2 := strconv.ParseFloat(f[1], 64)
			n, err3 := strconv.ParseInt(f[2], 10, 64)
			if err1 != nil || err2 != nil || err3 != nil {
				t.Fatalf("line %q does not parse", sc.Text())
			}
			lines = append(lines, hgrmLine{v, p, n})
		default:
			t.Fatalf("line %q is no percentile line", sc.Text())
		}
	}
	return lines, total
}

// WriteHGRM writes HdrHistogram's percentile distribution in ms, as the
// plotter reads it: the values rise with the percentiles, the median is
// the histogram's, in ms, and the last line and the footer count every
// value.
func TestWriteHGRM(t *testing.T) {
	h := NewHistogram()
	for _, d := range []time.Duration{msd(1), msd(2), msd(3), msd(40)} {
		Record(h, d)
	}
	var b bytes.Buffer
	if err := WriteHGRM(&b, h); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(b.String(), " Value\tPercentile\tTotalCount\t1/(1-Percentile)\n") {
		t.Errorf("WriteHGRM =\n%s\nwant the plotter's header first", b.String())
	}
	lines, total := readHGRM(t, &b)
	if len(lines) < 2 || total != 4 {
		t.Fatalf("%d lines, total %d: want a distribution of 4 values", len(lines), total)
	}
	for i := 1; i < len(lines); i++ {
		if lines[i].ms < lines[i-1].ms || lines[i].percentile < lines[i-1].percentile || lines[i].count < lines[i-1].count {
			t.Fatalf("line %d %+v falls below line %d %+v", i, lines[i], i-1, lines[i-1])
		}
	}
	last := lines[len(lines)-1]
	if last.percentile != 1 || last.count != 4 || math.Abs(last.ms-40) > 0.05 {
		t.Errorf("last line %+v, want 40ms at percentile 1 of 4", last)
	}
	for _, l := range lines {
		if l.percentile == 0.5 && math.Abs(l.ms-float64(h.ValueAtQuantile(50))/1000) > 0.001 {
			t.Errorf("median %.3fms, want the histogram's %dµs", l.ms, h.ValueAtQuantile(50))
		}
	}
}
