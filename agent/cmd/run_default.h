/* The embedded default configuration of `nodeprof run` (see run_default.c). */
#ifndef NP_CMD_RUN_DEFAULT_H
#define NP_CMD_RUN_DEFAULT_H

extern const char np_default_config[];

#endif
