// Package openapi plans an idempotency audit from an OpenAPI document:
// which operations to audit, and the request of each.
//
//	FILE|URL ──Load──▶ Spec ──Plan(PlanOptions)──▶ Plan{Ops, Skipped}
//	  │ $refs: files beside it,        │ key: header parameter, x-idempotency-key,
//	  │ or URLs on its host; bounded   │      body property, --key-header/--key-field
//	  │ reads; 2.0 converted to 3.0    │ body: fixtures, examples, else the schema
//	  └ broken $ref: the operation     │ parameters, security (--auth), effects
//	    left out, named with its       │      (fixtures, or a link to a read-back)
//	    JSON pointer                   └ an operation that cannot be planned is
//	                                     Skipped with its JSON pointer and reason
//
// The document is read with github.com/getkin/kin-openapi (OpenAPI 3.0,
// 3.1 and 3.2; Swagger 2.0 through its openapi2conv). Before the loader
// sees it, every operation's $refs are followed here, so that one that
// does not resolve leaves out that operation, not the whole document.
//
// Generated values are templates as a scenario's are: strings carry
// {{.Seq}} (a uuid format {{uuid .}}) so that each op sends its own.
// Nothing here sends a request or prints.
package openapi
