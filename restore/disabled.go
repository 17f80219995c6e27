package restore

import "slices"

// Rule names a rule of the plan that Disabled.Rules may switch off: ControllerManaged,
// NamespaceDefaults, StatefulSetClaims, AdmissionWebhooks, APIServices or
// ConversionWebhooks.
type Rule string

// Rules are the plan's rules that may be switched off.
var Rules = []Rule{ControllerManaged, NamespaceDefaults, StatefulSetClaims, AdmissionWebhooks, APIServices, ConversionWebhooks}

// ManagedFields names StepManagedFields' patch of the backup's managed fields, for
// DisabledByName: disabled (Disabled.ManagedFields), the target records the restore as
// the manager of every field, and the restore sends one request less an object that
// has managed fields.
const ManagedFields = "restoregraph.dev/managed-fields"

// Disabled says what a restore does not do of what it does by default. The zero value
// disables nothing.
type Disabled struct {
	// Actions are RestoreItemActions by name: the built-in ones (builtin.Names) and
	// plugins registered in Extensions.Plugins.
	Actions []string
	// Rules are the plan's rules.
	Rules []Rule
	// ManagedFields leaves the managed fields to the target: StepManagedFields does not
	// patch in those the backup recorded.
	ManagedFields bool
}

// DisabledByName sorts names, as a user gives them in one list (the command's
// --disable-plugin, a saved plan's "disable"), into what each disables: a Rule's name,
// ManagedFields, or else an action's.
func DisabledByName(names ...string) Disabled {
	var d Disabled
	for _, n := range names {
		switch {
		case n == ManagedFields:
			d.ManagedFields = true
		case slices.Contains(Rules, Rule(n)):
			d.Rules = append(d.Rules, Rule(n))
		default:
			d.Actions = append(d.Actions, n)
		}
	}
	return d
}

// Names is DisabledByName's inverse: every name d disables, in one list.
func (d Disabled) Names() []string {
	var out []string
	out = append(out, d.Actions...)
	for _, r := range d.Rules {
		out = append(out, string(r))
	}
	if d.ManagedFields {
		out = append(out, ManagedFields)
	}
	return out
}

// Rule reports whether the plan rule r is switched off.
func (d Disabled) Rule(r Rule) bool { return slices.Contains(d.Rules, r) }

// Action reports whether the action or plugin named name is switched off.
func (d Disabled) Action(name string) bool { return slices.Contains(d.Actions, name) }
