package queues

import "time"

// SetAskWait shortens how long p's drain waits on each question, for
// tests of a cluster that stops answering. Call it before its drain is
// asked.
func (p *Kafka) SetAskWait(d time.Duration) { p.askWait = d }

// SetTopicWait shortens how long p's Ping waits for its topic to appear.
func (p *Kafka) SetTopicWait(d time.Duration) { p.waitFor = d }
