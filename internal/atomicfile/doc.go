// Package atomicfile writes a file whole or not at all: into a temporary
// file beside it, synced, then renamed over it. A reader never sees half
// a file, a failed write leaves the old one, and a crash (a node lost
// under a shared volume) leaves the old file or the new, never an empty
// one. The run's files (report.json, history.jsonl) and a sharded run's
// (manifest.json, before.json, a shard's history) are written so.
package atomicfile
