/* An SDK's native library that defines the OpenTelemetry thread-local otel_thread_ctx_v1
 * (OTEP 4947), for otel_thread_ctx.c built with -DOTEL_CTX_LIB: the variable lives in this
 * library's TLS block (static TLS: the library is loaded at start-up), not the program's. */
__thread void *otel_thread_ctx_v1;

void otel_ctx_attach(void *rec);

void otel_ctx_attach(void *rec)
{
	otel_thread_ctx_v1 = rec;
}
