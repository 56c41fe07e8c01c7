/* libFuzzer target: discovery.docker's HTTP handling end to end (agent/discovery/docker.c):
 * np_docker_discover_once talks to a Docker Engine stand-in on a unix socket that answers
 * its three requests (/_ping, /vX/containers/json, /vX/networks) with the input's raw
 * bytes: status lines, headers (Api-Version, Content-Length, chunking), error bodies and
 * JSON, as a hostile or broken Engine could send them. The answers are separated by
 * "@@@\n"; each connection gets the next one and is then closed, so no input can make the
 * client wait. Checks: no crash, leak or undefined behaviour; a failure always says why;
 * every target has the labels the docker SD always sets. */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "agent/discovery/docker.h"

#define SEP "@@@\n"
#define MAX_ANSWERS 4

/* The server thread may still be writing when the client has given up (a body over the
 * size bound): it works on its own copy of the input, and an input ends only once the
 * server is idle again. */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t idle_cond = PTHREAD_COND_INITIALIZER;
static uint8_t *input; /* owned copy of the current input */
static const uint8_t *answers[MAX_ANSWERS];
static size_t answer_len[MAX_ANSWERS], n_answers, next_answer;
static int serving;
static char sock_path[108];
static int listen_fd = -1;

/* Reads the request head (the client sends nothing after it), bounded. */
static void read_request(int fd)
{
	char buf[4096];
	size_t have = 0;

	while (have < sizeof(buf) - 1) {
		ssize_t n = read(fd, buf + have, sizeof(buf) - 1 - have);
		if (n <= 0)
			return;
		have += (size_t)n;
		buf[have] = '\0';
		if (strstr(buf, "\r\n\r\n"))
			return;
	}
}

static void *serve(void *arg)
{
	(void)arg;
	for (;;) {
		int fd = accept(listen_fd, NULL, NULL);
		const uint8_t *a = NULL;
		size_t len = 0;

		if (fd < 0)
			continue;
		read_request(fd);
		pthread_mutex_lock(&lock);
		if (next_answer < n_answers) {
			a = answers[next_answer];
			len = answer_len[next_answer];
			next_answer++;
		}
		serving = 1;
		pthread_mutex_unlock(&lock);
		for (size_t off = 0; off < len;) {
			ssize_t n = send(fd, a + off, len - off, MSG_NOSIGNAL);
			if (n <= 0)
				break;
			off += (size_t)n;
		}
		close(fd);
		pthread_mutex_lock(&lock);
		serving = 0;
		pthread_cond_broadcast(&idle_cond);
		pthread_mutex_unlock(&lock);
	}
	return NULL;
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	char dir[] = "/tmp/fuzz-docker-XXXXXX";
	pthread_t t;

	(void)argc;
	(void)argv;
	if (!mkdtemp(dir))
		abort();
	snprintf(sock_path, sizeof(sock_path), "%s/docker.sock", dir);
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", sock_path);
	listen_fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (listen_fd < 0 || bind(listen_fd, (struct sockaddr *)&sa, sizeof(sa)) || listen(listen_fd, 16) ||
	    pthread_create(&t, NULL, serve, NULL))
		abort();
	pthread_detach(t);
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct np_docker_config cfg;
	struct np_targets out = NP_TARGETS_INIT;
	struct np_err err;
	char host[128];
	const uint8_t *p, *end;

	pthread_mutex_lock(&lock);
	free(input);
	input = malloc(size ? size : 1);
	if (!input)
		abort();
	memcpy(input, data, size);
	p = input;
	end = input + size;
	n_answers = next_answer = 0;
	while (n_answers < MAX_ANSWERS && p <= end) {
		const uint8_t *sep = memmem(p, (size_t)(end - p), SEP, strlen(SEP));
		const uint8_t *stop = sep ? sep : end;
		answers[n_answers] = p;
		answer_len[n_answers++] = (size_t)(stop - p);
		if (!sep)
			break;
		p = sep + strlen(SEP);
	}
	pthread_mutex_unlock(&lock);

	np_docker_config_init(&cfg);
	snprintf(host, sizeof(host), "unix://%s", sock_path);
	cfg.host = host;
	cfg.refresh_interval_ns = 2000000000LL; /* the request timeout; the server never stalls */
	cfg.max_response_bytes = 256 << 10;
	if (np_docker_discover_once(&cfg, &out, &err) == 0) {
		for (size_t i = 0; i < out.n; i++)
			if (!np_labels_get(&out.v[i], "__meta_docker_container_id") ||
			    !np_labels_get(&out.v[i], "__meta_docker_container_name") ||
			    !np_labels_get(&out.v[i], "__address__"))
				abort();
	} else if (!err.msg[0] || out.n != 0) {
		abort();
	}
	np_targets_free(&out);
	pthread_mutex_lock(&lock);
	n_answers = 0; /* late connections get nothing */
	while (serving)
		pthread_cond_wait(&idle_cond, &lock);
	pthread_mutex_unlock(&lock);
	return 0;
}
