/* The few kernel types the sampler reads, declared for CO-RE.
 *
 * Why a minimal header instead of a vmlinux.h generated at build time: the build
 * then does not depend on the build machine's kernel (Docker builds, chroots and
 * CI runners may have no /sys/kernel/btf/vmlinux), the header is reviewable, and
 * CO-RE relocates these fields against the running kernel's BTF at load time, so
 * only the field names and types must match, not the offsets. */
#ifndef NP_BPF_KERNEL_TYPES_H
#define NP_BPF_KERNEL_TYPES_H

#define PF_KTHREAD 0x00200000 /* include/linux/sched.h, stable since 2.6 */

typedef struct {
	int counter;
} np_atomic_t;

struct signal_struct {
	np_atomic_t live; /* threads of the group still alive; 0 once the last one exits */
} __attribute__((preserve_access_index));

struct task_struct {
	unsigned int flags;
	struct signal_struct *signal;
} __attribute__((preserve_access_index));

#endif
