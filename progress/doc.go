// Package progress shows a restore as a person follows it from a terminal or a log:
// the objects done, running and failed as they end (Line), what reading the backup
// from its store has read so far (Meter), how long the client's own rate limiter held
// requests back (Limiter) and since when the API server has not answered
// (Reachability). The command's progress line is made of these; an embedder's may be
// too.
package progress
