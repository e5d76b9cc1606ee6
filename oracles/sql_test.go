package oracles

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"go.uber.org/goleak"

	"github.com/idemcheck/idemcheck/checks"
	"github.com/idemcheck/idemcheck/history"
	"github.com/idemcheck/idemcheck/internal/testsvc"
)

// closedPort returns a 127.0.0.1 port nothing listens on.
func closedPort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	return port
}

// testCtx is a context that ends with the test, bounded in time.
func testCtx(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// pgExec runs statements on dsn with a connection of its own.
func pgExec(t *testing.T, dsn string, stmts ...string) {
	t.Helper()
	ctx := testCtx(t)
	c, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	defer c.Close(ctx)
	for _, s := range stmts {
		if _, err := c.Exec(ctx, s); err != nil {
			t.Fatalf("exec %q: %v", s, err)
		}
	}
}

func TestSQL(t *testing.T) {
	// not parallel: it checks for leaked goroutines
	dsn := testsvc.Postgres(t)
	// 30 keys x0..x29 with i%3 charges each, k1 once, k2 twice (a
	// duplicate), a key of another run, and rows with no key.
	stmts := []string{
		`CREATE TABLE payments (id serial PRIMARY KEY, idempotency_key text, amount int NOT NULL)`,
		`CREATE TABLE posts (id text PRIMARY KEY, likes int, label text)`,
		`INSERT INTO payments (idempotency_key, amount) VALUES ('k1', 100), ('k2', 100), ('k2', 100), ('other-run', 5), (NULL, 7), (NULL, 8)`,
		`INSERT INTO posts VALUES ('post-1', 3, 'three'), ('post-2', NULL, 'none'), ('post-3', 1, 'x'), ('post-3b', 1, 'x')`,
	}
	var keys []string
	want := map[string]int{"k1": 1, "k2": 2}
	for i := range 30 {
		k := fmt.Sprintf("x%d", i)
		keys = append(keys, k)
		for range i % 3 {
			stmts = append(stmts, fmt.Sprintf(`INSERT INTO payments (idempotency_key, amount) VALUES ('%s', 1)`, k))
		}
		if i%3 != 0 {
			want[k] = i % 3
		}
	}
	pgExec(t, dsn, stmts...)
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())

	const (
		perKey  = `SELECT count(*) FROM payments WHERE idempotency_key = $1`
		grouped = `SELECT idempotency_key, count(*) FROM payments GROUP BY 1`
	)
	h := keysHistory(append(keys, "k1", "k2", "k3", "k1")...)

	t.Run("effects", func(t *testing.T) {
		all := map[string]int{"other-run": 1}
		for k, n := range want {
			all[k] = n
		}
		for _, tc := range []struct {
			name   string
			oracle *SQLEffects
			h      *history.History
			want   map[string]int
		}{
			{"per-key", &SQLEffects{OracleName: "ledger", URL: dsn, PerKey: perKey, Concurrency: 4}, h, want},
			{"per-key, history spilled to disk", &SQLEffects{OracleName: "ledger", URL: dsn, PerKey: perKey, Concurrency: 4}, spilled(t, h), want},
			{"per-key default concurrency", &SQLEffects{OracleName: "ledger", URL: dsn, PerKey: perKey}, h, want},
			{"grouped", &SQLEffects{OracleName: "ledger", URL: dsn, Grouped: grouped}, h, want},
			{"grouped preferred", &SQLEffects{OracleName: "ledger", URL: dsn, Grouped: grouped, PerKey: "SELEC"}, h, want},
			{"grouped rows add up", &SQLEffects{OracleName: "ledger", URL: dsn,
				Grouped: `SELECT idempotency_key, 1 FROM payments`}, h, want},
			{"grouped zero counts dropped", &SQLEffects{OracleName: "ledger", URL: dsn,
				Grouped: `SELECT 'k1', 0 UNION ALL SELECT 'k2', 2::smallint UNION ALL SELECT 'k3', 0`}, h, map[string]int{"k2": 2}},
			{"grouped without a history keeps every key", &SQLEffects{OracleName: "ledger", URL: dsn, Grouped: grouped}, nil, all},
			{"per-key without a history reads nothing", &SQLEffects{OracleName: "ledger", URL: dsn, PerKey: perKey}, nil, map[string]int{}},
			{"per-key with no op does not connect", &SQLEffects{OracleName: "ledger",
				URL: fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres", closedPort(t)), PerKey: perKey}, hist(), map[string]int{}},
		} {
			t.Run(tc.name, func(t *testing.T) {
				obs, err := tc.oracle.Observe(testCtx(t), tc.h)
				if err != nil {
					t.Fatalf("Observe() error: %v", err)
				}
				wantObs := &history.Reading{Oracle: "ledger", Kind: history.KindEffects, Effects: tc.want}
				if diff := cmp.Diff(wantObs, obs); diff != "" {
					t.Errorf("Observe() (-want +got):\n%s", diff)
				}
			})
		}
	})

	t.Run("effects checked", func(t *testing.T) {
		// k2 was charged twice for one acknowledged op: a duplicate.
		dup := hist(o("k1", ok(201)), o("k2", lost(), ok(201)))
		// post-3 and post-3b (as keys of a grouped query on posts) have
		// one effect each.
		good := hist(o("post-3", ok(201)), o("post-3b", lost(), ok(201)))
		for _, tc := range []struct {
			name   string
			h      *history.History
			oracle *SQLEffects
			want   checks.Status
		}{
			{"per-key duplicate", dup, &SQLEffects{OracleName: "db", URL: dsn, PerKey: perKey}, checks.Fail},
			{"grouped duplicate", dup, &SQLEffects{OracleName: "db", URL: dsn, Grouped: grouped}, checks.Fail},
			{"per-key correct", good, &SQLEffects{OracleName: "db", URL: dsn,
				PerKey: `SELECT count(*) FROM posts WHERE id = $1`}, checks.Pass},
			{"grouped correct", good, &SQLEffects{OracleName: "db", URL: dsn,
				Grouped: `SELECT id, count(*) FROM posts GROUP BY id`}, checks.Pass},
		} {
			t.Run(tc.name, func(t *testing.T) {
				obs, err := tc.oracle.Observe(testCtx(t), tc.h)
				if err != nil {
					t.Fatalf("Observe() error: %v", err)
				}
				for _, check := range []string{checks.AtMostOnce, checks.ExactlyOnce} {
					v := checks.Check(tc.h, history.Invariant{Check: check, Oracle: "db"}, obs)
					if v.Status != tc.want {
						t.Errorf("checks.Check(%s) = %s (%s), want %s", check, v.Status, v.Summary, tc.want)
					}
				}
			})
		}
	})

	t.Run("counter", func(t *testing.T) {
		table := "posts_counter"
		pgExec(t, dsn, `CREATE TABLE `+table+` (id text PRIMARY KEY, likes int NOT NULL)`,
			`INSERT INTO `+table+` VALUES ('post-1', 3)`)
		q := `SELECT likes FROM ` + table + ` WHERE id = 'post-1'`
		two := hist(o("op-1", ok(200)), o("op-2", ok(200)))
		for _, tc := range []struct {
			name       string
			increment  int
			want       checks.Status
			wantBefore int64
		}{
			{"exact", 2, checks.Pass, 3},
			{"counted twice", 3, checks.Fail, 5},
		} {
			t.Run(tc.name, func(t *testing.T) {
				c := &SQLCounter{OracleName: "likes", URL: dsn, Query: q}
				if err := c.Before(testCtx(t)); err != nil {
					t.Fatalf("Before() error: %v", err)
				}
				pgExec(t, dsn, fmt.Sprintf(`UPDATE %s SET likes = likes + %d`, table, tc.increment))
				obs, err := c.Observe(testCtx(t), two)
				if err != nil {
					t.Fatalf("Observe() error: %v", err)
				}
				after := tc.wantBefore + int64(tc.increment)
				wantObs := &history.Reading{Oracle: "likes", Kind: history.KindCounter, Before: &tc.wantBefore, After: &after}
				if diff := cmp.Diff(wantObs, obs); diff != "" {
					t.Errorf("Observe() (-want +got):\n%s", diff)
				}
				if v := checks.Check(two, history.Invariant{Check: checks.ExactCounter, Oracle: "likes"}, obs); v.Status != tc.want {
					t.Errorf("checks.Check(exact_counter) = %s (%s), want %s", v.Status, v.Summary, tc.want)
				}
			})
		}
		t.Run("missing row read as 0 with coalesce", func(t *testing.T) {
			c := &SQLCounter{OracleName: "likes", URL: dsn,
				Query: `SELECT coalesce((SELECT likes FROM ` + table + ` WHERE id = 'nope'), 0)`}
			if err := c.Before(testCtx(t)); err != nil {
				t.Fatalf("Before() error: %v", err)
			}
			obs, err := c.Observe(testCtx(t), two)
			if err != nil {
				t.Fatalf("Observe() error: %v", err)
			}
			if *obs.Before != 0 || *obs.After != 0 {
				t.Errorf("Observe() = before %d after %d, want 0 and 0", *obs.Before, *obs.After)
			}
		})
		t.Run("no before", func(t *testing.T) {
			c := &SQLCounter{OracleName: "likes", URL: dsn, Query: q}
			if _, err := c.Observe(testCtx(t), two); !errors.Is(err, ErrNoBefore) {
				t.Errorf("Observe() without Before error = %v, want ErrNoBefore", err)
			}
		})
	})

	t.Run("errors", func(t *testing.T) {
		port := closedPort(t)
		closed := fmt.Sprintf("postgres://postgres:hunter2@127.0.0.1:%d/postgres?sslmode=disable&connect_timeout=5", port)
		closedKV := fmt.Sprintf("host=127.0.0.1 port=%d user=postgres password=hunter2 sslmode=disable", port)
		withPassword := strings.Replace(dsn, "postgres@", "postgres:hunter2@", 1) // trust auth ignores it
		readKey := func(q string) Oracle { return &SQLEffects{OracleName: "ledger", URL: withPassword, PerKey: q} }
		readGrouped := func(q string) Oracle { return &SQLEffects{OracleName: "ledger", URL: withPassword, Grouped: q} }
		readCounter := func(q string) Oracle { return &SQLCounter{OracleName: "ledger", URL: withPassword, Query: q} }
		for _, tc := range []struct {
			name   string
			oracle Oracle
			// want are substrings of the error.
			want    []string
			is      error
			sqlCode string // the SQLSTATE of a *pgconn.PgError in the chain
			query   string // QueryError.Query; "-" for no QueryError
		}{
			{"syntax error", readKey(`SELEC count(*) FROM payments WHERE idempotency_key = $1`),
				[]string{"oracle ledger", `query "SELEC count(*)`, `$1 = "`, "syntax error"}, nil, "42601",
				`SELEC count(*) FROM payments WHERE idempotency_key = $1`},
			{"grouped syntax error", readGrouped(`SELECT idempotency_key, count(*) FROM payments GROUP BY`),
				[]string{"syntax error at end of input"}, nil, "42601", `SELECT idempotency_key, count(*) FROM payments GROUP BY`},
			{"counter syntax error", readCounter(`SELECT likes FRM posts`), []string{"syntax error"}, nil, "42601", `SELECT likes FRM posts`},
			{"unknown table", readKey(`SELECT count(*) FROM nope WHERE k = $1`), []string{`relation "nope" does not exist`}, nil, "42P01",
				`SELECT count(*) FROM nope WHERE k = $1`},
			{"no parameter", readKey(`SELECT count(*) FROM payments`), []string{"expected 0 arguments, got 1"}, nil, "",
				`SELECT count(*) FROM payments`},
			{"text column", readKey(`SELECT 'many' WHERE $1::text IS NOT NULL`),
				[]string{"unexpected type", "want one integer column", "cannot scan"}, ErrType, "",
				`SELECT 'many' WHERE $1::text IS NOT NULL`},
			{"two columns", readKey(`SELECT count(*), 1 FROM payments WHERE idempotency_key = $1`),
				[]string{"the query returns 2 columns, unexpected type: want one integer column"}, ErrType, "",
				`SELECT count(*), 1 FROM payments WHERE idempotency_key = $1`},
			{"no row", readCounter(`SELECT likes FROM posts WHERE id = 'nope'`), []string{"no row", "coalesce"}, nil, "",
				`SELECT likes FROM posts WHERE id = 'nope'`},
			{"many rows", readCounter(`SELECT likes FROM posts WHERE id LIKE 'post-3%'`), []string{"more than one row"}, nil, "",
				`SELECT likes FROM posts WHERE id LIKE 'post-3%'`},
			{"null", readCounter(`SELECT likes FROM posts WHERE id = 'post-2'`), []string{"NULL"}, ErrType, "",
				`SELECT likes FROM posts WHERE id = 'post-2'`},
			{"not a row query", readCounter(`SELECT FROM posts LIMIT 1`), []string{"returns 0 columns"}, ErrType, "", `SELECT FROM posts LIMIT 1`},
			{"grouped text count", readGrouped(`SELECT id, label FROM posts`), []string{"want (key text, count integer)"}, ErrType, "",
				`SELECT id, label FROM posts`},
			{"grouped one column", readGrouped(`SELECT id FROM posts`), []string{"returns 1 column,"}, ErrType, "", `SELECT id FROM posts`},
			{"read-only", readCounter(`WITH d AS (DELETE FROM payments RETURNING 1) SELECT count(*) FROM d`),
				[]string{"read-only transaction"}, nil, "25006", `WITH d AS (DELETE FROM payments RETURNING 1) SELECT count(*) FROM d`},
			{"unreachable", &SQLEffects{OracleName: "ledger", URL: closed, Grouped: grouped},
				[]string{"oracle ledger: postgres://postgres:xxxxx@127.0.0.1:", "connecting", "connect"}, nil, "", ""},
			{"unreachable per-key", &SQLEffects{OracleName: "ledger", URL: closed, PerKey: perKey},
				[]string{"connecting"}, nil, "", ""},
			{"unreachable counter", &SQLCounter{OracleName: "ledger", URL: closedKV, Query: "SELECT 1"},
				[]string{"host=127.0.0.1 port=", "password=xxxxx", "connecting"}, nil, "", ""},
			{"bad URL", &SQLCounter{OracleName: "ledger", URL: "postgres://u:hunter2@127.0.0.1:notaport/x", Query: "SELECT 1"},
				[]string{"oracle ledger: postgres://<unparseable URL redacted>", "cannot parse"}, nil, "", "-"},
			{"no URL", &SQLCounter{OracleName: "ledger", Query: "SELECT 1"}, []string{"oracle ledger: no database URL"}, nil, "", "-"},
			{"no query", &SQLEffects{OracleName: "ledger", URL: dsn}, []string{"oracle ledger: neither"}, nil, "", "-"},
			{"no counter query", &SQLCounter{OracleName: "ledger", URL: dsn}, []string{"oracle ledger: no query"}, nil, "", "-"},
		} {
			t.Run(tc.name, func(t *testing.T) {
				err := tc.oracle.Before(testCtx(t))
				if err == nil {
					_, err = tc.oracle.Observe(testCtx(t), h)
				}
				if err == nil {
					t.Fatal("Observe() error = nil, want an error")
				}
				msg := err.Error()
				t.Logf("error: %s", msg)
				for _, w := range tc.want {
					if !strings.Contains(msg, w) {
						t.Errorf("Observe() error = %q, want it to contain %q", msg, w)
					}
				}
				if strings.Contains(msg, "hunter2") {
					t.Errorf("Observe() error = %q shows the password", msg)
				}
				if tc.is != nil && !errors.Is(err, tc.is) {
					t.Errorf("Observe() error = %v, want errors.Is %v", err, tc.is)
				}
				var pe *pgconn.PgError
				if got := errors.As(err, &pe); got != (tc.sqlCode != "") || (got && pe.Code != tc.sqlCode) {
					t.Errorf("Observe() error = %v, want a PgError with code %q", err, tc.sqlCode)
				}
				var qe *QueryError
				if got := errors.As(err, &qe); got != (tc.query != "-") {
					t.Errorf("Observe() error = %v (%T), want a QueryError: %v", err, err, tc.query != "-")
				} else if got && qe.Query != tc.query {
					t.Errorf("QueryError.Query = %q, want %q", qe.Query, tc.query)
				}
			})
		}
	})

	t.Run("canceled", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		for _, oracle := range []Oracle{
			&SQLEffects{OracleName: "ledger", URL: dsn, PerKey: perKey},
			&SQLEffects{OracleName: "ledger", URL: dsn, Grouped: grouped},
		} {
			if _, err := oracle.Observe(ctx, h); !errors.Is(err, context.Canceled) {
				t.Errorf("Observe(canceled) error = %v, want context.Canceled", err)
			}
		}
		c := &SQLCounter{OracleName: "likes", URL: dsn, Query: "SELECT 1"}
		if err := c.Before(ctx); !errors.Is(err, context.Canceled) {
			t.Errorf("Before(canceled) error = %v, want context.Canceled", err)
		}
	})

	t.Run("connections closed", func(t *testing.T) {
		// Every oracle above closed its connections: only the setup
		// connection of this test is open.
		o := &SQLEffects{OracleName: "ledger", URL: dsn, PerKey: perKey, Concurrency: 8}
		if _, err := o.Observe(testCtx(t), h); err != nil {
			t.Fatalf("Observe() error: %v", err)
		}
		ctx := testCtx(t)
		c, err := pgx.Connect(ctx, dsn)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close(ctx)
		var n int
		q := `SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'client backend' AND pid <> pg_backend_pid()`
		// A closed connection's backend exits shortly after the client
		// leaves: poll briefly.
		deadline := time.Now().Add(5 * time.Second)
		for {
			if err := c.QueryRow(ctx, q).Scan(&n); err != nil {
				t.Fatal(err)
			}
			if n == 0 || time.Now().After(deadline) {
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
		if n != 0 {
			t.Errorf("other client connections after Observe = %d, want 0", n)
		}
	})
}

func TestRedactDSN(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"postgres://u:hunter2@h:5432/db?sslmode=disable", "postgres://u:xxxxx@h:5432/db?sslmode=disable"},
		{"postgres://u@h/db", "postgres://u@h/db"},
		{"postgres://u@h/db?password=hunter2", "postgres://u@h/db?password=xxxxx"},
		{"redis://:hunter2@127.0.0.1:6379/0", "redis://:xxxxx@127.0.0.1:6379/0"},
		{"host=h user=u password=hunter2 dbname=db", "host=h user=u password=xxxxx dbname=db"},
		{"host=h password = 'hun ter\\'2' dbname=db", "host=h password = xxxxx dbname=db"},
		{"postgres://u:hun#ter2@h:x/db", "postgres://<unparseable URL redacted>"},
	} {
		if got := redactDSN(tc.in); got != tc.want {
			t.Errorf("redactDSN(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestParallel(t *testing.T) {
	for _, tc := range []struct{ n, conc int }{{0, 8}, {1, 8}, {100, 3}, {5, 100}} {
		seen := make([]int, tc.n)
		err := parallel(context.Background(), "o", tc.n, concurrency(tc.conc, tc.n), func(_ context.Context, i int) error {
			seen[i]++
			return nil
		})
		if err != nil {
			t.Errorf("parallel(%d, %d) error: %v", tc.n, tc.conc, err)
		}
		for i, c := range seen {
			if c != 1 {
				t.Errorf("parallel(%d, %d) called fn(%d) %d times, want 1", tc.n, tc.conc, i, c)
			}
		}
	}
	boom := errors.New("boom")
	err := parallel(context.Background(), "o", 100, 4, func(_ context.Context, i int) error {
		if i == 7 {
			return boom
		}
		return nil
	})
	if !errors.Is(err, boom) {
		t.Errorf("parallel() error = %v, want boom", err)
	}
	for conc, want := range map[int]int{0: 8, -1: 8, 3: 3} {
		if got := concurrency(conc, 100); got != want {
			t.Errorf("concurrency(%d, 100) = %d, want %d", conc, got, want)
		}
	}
	if got := concurrency(8, 0); got != 1 {
		t.Errorf("concurrency(8, 0) = %d, want 1", got)
	}
}
