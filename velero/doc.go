// Package velero reads and writes what Velero keeps, so that restoregraph restores
// Velero's backups and Velero shows restoregraph's restores as its own:
//
//   - Velero's objects in its namespace (Client): a Backup by name or the newest of a
//     Schedule's, its BackupStorageLocation and the Secrets that location names; the
//     Restores, checked, recorded and their status written with Velero's own types.
//   - A location's bucket (Store, from Client.OpenLocation), through the location's
//     object-store plugin run by a pluginhost.Host, configured as Velero configures it,
//     and laid out as Velero lays it out: the tarball of a backup, the files of a
//     restore (results, resource list, log), the record beside a backup.
//   - A Restore's spec, read strictly with Velero's types (ReadRestore: a field
//     restoregraph does not do is a *SpecFieldError naming it) into a
//     restore.Selection, and written back from one (SpecOf).
//   - A restore's record (RecordOf): what Velero would keep of a restore.Report, its
//     log a structured line per object, with no Secret's data.
//
// The controller that carries out Velero's Restore objects is velero/controller; the
// plugin processes are velero/pluginhost.
package velero
