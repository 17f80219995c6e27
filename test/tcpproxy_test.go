package test

import (
	"io"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// tcpProxy stands between a client and a server on loopback, byte for byte (TLS passes
// through), and fails on demand as a network does: Cut resets every connection and
// every new one for a while; Stall holds every byte in both directions for a while,
// connections open.
type tcpProxy struct {
	Addr   string
	target string
	ln     net.Listener

	mu       sync.Mutex
	conns    map[net.Conn]struct{}
	refuse   bool
	flowing  chan struct{} // closed while bytes flow
	cut      atomic.Int64  // connections reset by Cut
	accepted atomic.Int64  // connections made through the proxy
}

func newTCPProxy(t *testing.T, target string) *tcpProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	p := &tcpProxy{Addr: ln.Addr().String(), target: target, ln: ln, conns: map[net.Conn]struct{}{}, flowing: make(chan struct{})}
	close(p.flowing)
	go p.accept()
	t.Cleanup(func() { ln.Close(); p.resetAll() })
	return p
}

func (p *tcpProxy) accept() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.accepted.Add(1)
		p.mu.Lock()
		refuse := p.refuse
		p.mu.Unlock()
		if refuse {
			reset(c)
			continue
		}
		go p.serve(c)
	}
}

func (p *tcpProxy) serve(client net.Conn) {
	server, err := net.Dial("tcp", p.target)
	if err != nil {
		reset(client)
		return
	}
	p.mu.Lock()
	p.conns[client], p.conns[server] = struct{}{}, struct{}{}
	p.mu.Unlock()
	var wg sync.WaitGroup
	wg.Go(func() { p.pipe(server, client) })
	wg.Go(func() { p.pipe(client, server) })
	wg.Wait()
	p.mu.Lock()
	delete(p.conns, client)
	delete(p.conns, server)
	p.mu.Unlock()
}

// pipe copies from src to dst, waiting while the proxy stalls; either side ending ends
// both.
func (p *tcpProxy) pipe(dst, src net.Conn) {
	defer dst.Close()
	defer src.Close()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			p.mu.Lock()
			flowing := p.flowing
			p.mu.Unlock()
			<-flowing
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			if err != io.EOF {
				reset(dst)
			}
			return
		}
	}
}

// Cut resets every connection now and every new one for d, as a network that drops
// connections does, then lets connections through again.
func (p *tcpProxy) Cut(d time.Duration) {
	p.mu.Lock()
	p.refuse = true
	p.mu.Unlock()
	p.cut.Add(int64(p.resetAll()))
	time.Sleep(d)
	p.mu.Lock()
	p.refuse = false
	p.mu.Unlock()
}

// Stall holds every byte for d, connections open, as a network that stops delivering
// does.
func (p *tcpProxy) Stall(d time.Duration) {
	p.mu.Lock()
	p.flowing = make(chan struct{})
	flowing := p.flowing
	p.mu.Unlock()
	time.Sleep(d)
	close(flowing)
}

func (p *tcpProxy) resetAll() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	for c := range p.conns {
		reset(c)
	}
	return len(p.conns) / 2
}

// reset closes c with a TCP reset, not an orderly close.
func reset(c net.Conn) {
	if tc, ok := c.(*net.TCPConn); ok {
		tc.SetLinger(0)
	}
	c.Close()
}
