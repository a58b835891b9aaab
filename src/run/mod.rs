//! A run: everything the helper executes between its command line and
//! the command's exec, and after it until its status is handed back, in
//! the order it happens.
//!
//! - `userns`: the way in with namespaces: the thread-count wait, the user
//!   namespace (bounded `EINVAL` retry), and the failure's cause; `threads`
//!   the thread count it waits on.
//! - `capfree`: the second way in, where a user namespace gives no usable
//!   capability: the same filters and a Landlock domain, no namespaces.
//! - `tasks` and `cgroup`: the run's caps (tasks, memory, CPU), checked
//!   before anything runs.
//! - `plan`: what the processes share (the plan, the control channel).
//! - `supervise`: the outer stub and the inner init: the mounts, the
//!   listener, the serve loop, the end; `terminal` the foreground group.
//! - `worker`: the filters installed, the command exec'd.
//! - `sockets` (with `named_sockets`, `unix_diag`): the own-sockets policy
//!   the stub keeps, or the kernel's.
//! - `guard`: the mount guard.
//! - `observe` and `report`: write observation and the refused calls'
//!   line.
pub mod capfree;
pub mod cgroup;
pub mod guard;
pub mod named_sockets;
pub mod observe;
pub mod plan;
pub mod report;
pub mod sockets;
pub mod supervise;
pub mod tasks;
pub mod terminal;
pub mod threads;
pub mod unix_diag;
pub mod userns;
pub mod worker;
