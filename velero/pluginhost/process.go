package pluginhost

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	goplugin "github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// process is one plugin executable, run as Velero's restartable processes are: started
// on first use, and started again for the next call once it died under one. A process
// that lets a call's time run out (it hangs) is replaced for the calls after it, and
// killed once the calls still under way on it have ended, so that one hung call fails
// no other.
type process struct {
	command string
	args    []string
	env     []string
	log     io.Writer

	mu       sync.Mutex
	cur      *instance   // where new calls go; nil before the first and after it was replaced
	replaced []*instance // killed as their last call ends
	starts   int
}

// instance is one run of the executable.
type instance struct {
	client *goplugin.Client
	rpc    goplugin.ClientProtocol
	calls  int // under way
	start  int // which of the process's starts it is
}

// call is one call under way on an instance; end ends it.
type call struct {
	p    *process
	inst *instance
	conn *grpc.ClientConn
}

// grpcConn is what go-plugin dispenses: the connection, for the generated clients.
type grpcConn struct {
	goplugin.NetRPCUnsupportedPlugin
}

func (grpcConn) GRPCServer(*goplugin.GRPCBroker, *grpc.Server) error {
	return errors.New("pluginhost: only a client")
}

func (grpcConn) GRPCClient(_ context.Context, _ *goplugin.GRPCBroker, c *grpc.ClientConn) (any, error) {
	return c, nil
}

// begin starts a call of kind, starting the process when it is not running (the first
// time, after it exited, after it was replaced).
func (p *process) begin(kind string) (*call, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cur != nil && p.cur.client.Exited() {
		p.retire(p.cur)
	}
	if p.cur == nil {
		inst, err := p.startInstance()
		if err != nil {
			return nil, err
		}
		p.cur = inst
	}
	raw, err := p.cur.rpc.Dispense(kind)
	if err != nil {
		return nil, fmt.Errorf("pluginhost: %s: %s: %w", p.command, kind, err)
	}
	p.cur.calls++
	return &call{p: p, inst: p.cur, conn: raw.(*grpc.ClientConn)}, nil
}

// end ends the call with its error, and returns that error saying what became of the
// process: one that died under the call (the connection is gone) is started again for
// the next call; one that did not answer before the call's context ended is replaced
// for the next call, and killed once nothing waits on it. The restore names the plugin.
func (c *call) end(ctx context.Context, err error) error {
	p := c.p
	p.mu.Lock()
	c.inst.calls--
	switch {
	case err == nil:
	case status.Code(err) == codes.Unavailable:
		err = fmt.Errorf("its process %s exited during the call (it is started again for the next one): %w", p.command, err)
		p.retire(c.inst)
	case ctx.Err() != nil:
		err = fmt.Errorf("its process %s did not answer in time (it is replaced for the next call): %w", p.command, err)
		p.retire(c.inst)
	}
	idle := p.reap()
	p.mu.Unlock()
	kill(idle)
	return err
}

// retire sends new calls to a new process.
func (p *process) retire(inst *instance) {
	if p.cur == inst {
		p.cur = nil
		p.replaced = append(p.replaced, inst)
	}
}

// reap takes the replaced instances no call waits on any more, to be killed.
func (p *process) reap() []*instance {
	var idle, busy []*instance
	for _, inst := range p.replaced {
		if inst.calls == 0 {
			idle = append(idle, inst)
		} else {
			busy = append(busy, inst)
		}
	}
	p.replaced = busy
	return idle
}

// close kills every instance, whatever waits on them.
func (p *process) close() {
	p.mu.Lock()
	all := p.replaced
	if p.cur != nil {
		all = append(all, p.cur)
	}
	p.cur, p.replaced = nil, nil
	p.mu.Unlock()
	kill(all)
}

// kill ends instances, outside the lock: go-plugin gives each a moment to stop.
func kill(insts []*instance) {
	for _, inst := range insts {
		inst.client.Kill()
	}
}

func (p *process) startInstance() (*instance, error) {
	cmd := exec.Command(p.command, p.args...)
	cmd.Env = append(os.Environ(), p.env...)
	cmd.SysProcAttr = dieWithParent()
	plugins := map[string]goplugin.Plugin{kindPluginLister: grpcConn{}, KindRestoreItemAction: grpcConn{}, KindRestoreItemActionV2: grpcConn{}, KindObjectStore: grpcConn{},
		KindVolumeSnapshotter: grpcConn{}}
	client := goplugin.NewClient(&goplugin.ClientConfig{
		HandshakeConfig: handshake, Plugins: plugins, Cmd: cmd,
		AllowedProtocols: []goplugin.Protocol{goplugin.ProtocolGRPC},
		Logger:           hclog.New(&hclog.LoggerOptions{Output: io.Discard, Level: hclog.Error}),
		StartTimeout:     30 * time.Second,
		Stderr:           &quietLog{to: p.log},
	})
	rpc, err := client.Client()
	if err != nil {
		client.Kill()
		return nil, fmt.Errorf("pluginhost: start %s: %w", p.command, err)
	}
	p.starts++
	return &instance{client: client, rpc: rpc, start: p.starts}, nil
}
