// Package canon is the canonical JSON form of response bodies and the
// fingerprints built on it.
//
// Two answers that differ only in the order of their object members, in
// insignificant whitespace or in how their strings are escaped have the same
// canonical form, and so the same fingerprint; any other difference changes
// it. The same_response invariant compares answers by these fingerprints.
//
//	body --Canonical (streaming, no decode)----------------+
//	  |                                                     v
//	  +--Decode--> value --remove volatile paths--Encode--> canonical bytes --FNV-1a--> fingerprint
//	  |
//	  +--(not JSON)-----------------------------------------------FNV-1a--> fingerprint
//
// The canonical form: object members sorted by key (byte order of the
// key's canonical encoding, equal keys kept in their order), no whitespace,
// strings escaping only '"', '\\' and control characters and written in
// UTF-8 (invalid bytes as U+FFFD), numbers written as they were (1.0 and 1
// differ). A body that is not one JSON value, or nests deeper than 256
// levels, is hashed as it is. A Buffer holds the scratch space, reused from
// one body to the next.
package canon
