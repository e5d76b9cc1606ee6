// Package redact keeps secrets out of everything idemcheck writes: reports,
// saved runs, errors and terminal lines.
//
// It is one set of functions for every URL, connection string and header
// that can reach an output, built on net/url alone so that the packages
// that render (checks, reports) can use it without net/http:
//
//	URL, String      a URL (any scheme, any case) or a key=value DSN:
//	                 the userinfo password, every query value and the
//	                 fragment masked; an unparseable URL masked whole,
//	                 keeping only its scheme; path segments on request
//	SecretHeader     whether a header carries a credential
//	Secrets.Scrub    known secret values (the credentials a run sends)
//	                 replaced in free text: reflected answers, errors
//
// Values are masked by default; Options.Keep names the parameters whose
// values are safe to show (an idempotency key, sslmode).
package redact
