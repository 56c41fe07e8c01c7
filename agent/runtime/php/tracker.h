/* The PHP side of the profiler: which sampled processes run PHP (told to the BPF walker through
 * its php_procs map, bpf/php.h), and their samples' PHP frames named and put into their native
 * stacks.
 *
 * One thread owns a tracker (the collector's). */
#ifndef NP_PHP_TRACKER_H
#define NP_PHP_TRACKER_H

#include <stddef.h>
#include <stdint.h>

#include "agent/runtime/runtime.h"

/* Its user-space side is rt_php_ops (agent/runtime/runtime.h), defined in tracker.c: open finds
 * the walker's php_procs map and php_procs_live count; process looks for PHP
 * (agent/runtime/php/detect.h) and tells the walker its layout, logging once per reason a PHP
 * it cannot walk; merge names a sample's PHP frames (namer.h) and puts them where the native
 * execute_ex frames stand (agent/runtime/chain.h); a process the tracker does not know in that
 * incarnation (it exec'd since) keeps its native stack. */

/* 1 when a named native frame is the Zend VM's loop, execute_ex. */
int php_is_vm_frame(const struct sym_frame *f);

#endif
