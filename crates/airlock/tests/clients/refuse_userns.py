"""Runs a command as a container runtime's default seccomp profile would: creating a
user namespace is refused (unshare, and clone with CLONE_NEWUSER: EPERM; clone3:
ENOSYS, so the C library falls back to clone), though the kernel offers them.
Used by crates/airlock/tests/it/worker.rs: refuse_userns.py COMMAND [ARG...]
Needs Debian's python3-seccomp (libseccomp's bindings), so run with /usr/bin/python3."""

import errno
import os
import sys

import seccomp

CLONE_NEWUSER = 0x10000000

rules = seccomp.SyscallFilter(defaction=seccomp.ALLOW)
rules.add_rule(seccomp.ERRNO(errno.EPERM), "unshare")
rules.add_rule(seccomp.ERRNO(errno.EPERM), "clone",
               seccomp.Arg(0, seccomp.MASKED_EQ, CLONE_NEWUSER, CLONE_NEWUSER))
rules.add_rule(seccomp.ERRNO(errno.ENOSYS), "clone3")
rules.load()
os.execvp(sys.argv[1], sys.argv[1:])
