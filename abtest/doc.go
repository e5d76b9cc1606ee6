// Package abtest measures what one operation costs over another, A over B,
// on the same API at the same rate: the idempotency layer's overhead.
//
// The two arms run in the open model (latency from each op's intended
// start) in short blocks, interleaved ABBA so that drift in the machine or
// the target hits both arms alike. The first blocks are a warm-up and are
// discarded. Each arm's latency lands in an HdrHistogram (for .hgrm files)
// and, per block, in a sorted sample; the difference A − B at each
// percentile gets a 95% confidence interval from a bootstrap over blocks
// (a block and its paired block of the other arm are drawn together), and
// a Budget judges it: within, exceeded (with confidence) or unclear.
//
//	round:   0     1     2     3   ...
//	order:  A B   B A   A B   B A         (ABBA)
//	         │     │
//	         └─────┴──> per-arm blocks ──> Compare (block bootstrap) ──> Judge
//
// FindRate looks for the highest rate an arm sustains, for --rate auto.
// Costs runs the A/B over the built-in protected/naive pairs, for the demo.
// The package never prints: it returns values.
package abtest
