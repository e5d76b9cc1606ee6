package hint

// Error is a problem and what to write instead ("" when the problem says
// it all).
type Error struct {
	Err  error
	hint string
}

// New is err with its hint.
func New(hint string, err error) *Error { return &Error{Err: err, hint: hint} }

func (e *Error) Error() string { return e.Err.Error() }

// Unwrap is the problem.
func (e *Error) Unwrap() error { return e.Err }

// Hint says what to write instead.
func (e *Error) Hint() string { return e.hint }
