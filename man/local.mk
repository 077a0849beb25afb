# man: the manual, written in Markdown (man/NAME.SECTION.md) and rendered by pandoc
# (man/render.sh) into man pages and HTML. The tarball ships the rendered pages, so a
# build from it needs no pandoc; symcoll(7) lists the variables of src/core/config.c.
SYMCOLL_MAN1 = man/symcoll_run.1 man/symcoll_perf.1 man/symcoll_info.1 man/symcoll_tune.1
SYMCOLL_MAN3 = \
	man/symcoll_allreduce.3 man/symcoll_reduce_scatter.3 man/symcoll_allgather.3 \
	man/symcoll_broadcast.3 man/symcoll_barrier.3 \
	man/symcoll_comm_create.3 man/symcoll_comm_create_version.3 \
	man/symcoll_comm_destroy.3 man/symcoll_comm_abort.3 \
	man/symcoll_comm_split.3 man/symcoll_comm_shrink.3 \
	man/symcoll_comm_rank.3 man/symcoll_comm_size.3 \
	man/symcoll_comm_print_topology.3 man/symcoll_comm_print_decisions.3 \
	man/symcoll_comm_set_algo.3 man/symcoll_comm_layout.3 \
	man/symcoll_mem_alloc.3 man/symcoll_mem_free.3 \
	man/symcoll_pool_query.3 man/symcoll_pool_trim.3 man/symcoll_pool_reserve.3 \
	man/symcoll_status_string.3 man/symcoll_version_string.3 \
	man/symcoll_get_version.3 man/symcoll_build_info.3 man/symcoll_config_print.3 \
	man/symcoll_dtype_size.3 man/symcoll_dtype_name.3 man/symcoll_op_name.3 \
	man/symcoll_status_t.3 man/symcoll_comm_h.3 man/symcoll_dtype_t.3 \
	man/symcoll_op_t.3 man/symcoll_mem_type_t.3 man/symcoll_comm_params_t.3 \
	man/symcoll_reduction_order_t.3 \
	man/symcoll_pool_attr_t.3 man/symcoll_allgather_fn_t.3
SYMCOLL_MAN7 = man/symcoll.7
SYMCOLL_MAN_RENDERED = $(SYMCOLL_MAN1) $(SYMCOLL_MAN3) $(SYMCOLL_MAN7)
# one page per status code, each a .so request that opens symcoll_status_t(3)
SYMCOLL_MAN_ALIASES = \
	man/SYMCOLL_OK.3 man/SYMCOLL_ERR_INVALID_PARAM.3 man/SYMCOLL_ERR_NO_MEMORY.3 \
	man/SYMCOLL_ERR_UNSUPPORTED.3 man/SYMCOLL_ERR_TIMED_OUT.3 \
	man/SYMCOLL_ERR_PEER_FAILED.3 man/SYMCOLL_ERR_ABORTED.3 man/SYMCOLL_ERR_MISMATCH.3 \
	man/SYMCOLL_ERR_SYSTEM.3 man/SYMCOLL_ERR_CUDA.3 man/SYMCOLL_ERR_UCX.3 \
	man/SYMCOLL_ERR_BOOTSTRAP.3 man/SYMCOLL_ERR_INTERNAL.3 man/SYMCOLL_ERR_IN_PROGRESS.3
SYMCOLL_MAN_HTML = $(SYMCOLL_MAN_RENDERED:=.html)

EXTRA_DIST += $(SYMCOLL_MAN_RENDERED:=.md) $(SYMCOLL_MAN_RENDERED) $(SYMCOLL_MAN_HTML) \
	$(SYMCOLL_MAN_ALIASES) man/render.sh man/config-vars.awk

# configure turns SYMCOLL_MAN off only where neither pandoc nor rendered pages are found
# (a git checkout without pandoc); `make dist` then stops, asking for pandoc.
if SYMCOLL_MAN
man_MANS = $(SYMCOLL_MAN_RENDERED) $(SYMCOLL_MAN_ALIASES)
symcollhtmldir = $(docdir)/html
symcollhtml_DATA = $(SYMCOLL_MAN_HTML)
endif

SYMCOLL_RENDER = PANDOC='$(PANDOC)' VERSION='$(VERSION)' srcdir='$(srcdir)' \
	$(SHELL) $(srcdir)/man/render.sh
SUFFIXES = .1.md .1 .1.html .3.md .3 .3.html

$(SYMCOLL_MAN_RENDERED) $(SYMCOLL_MAN_HTML): man/render.sh

.1.md.1:
	$(AM_V_GEN)$(SYMCOLL_RENDER) man $< $@
.1.md.1.html:
	$(AM_V_GEN)$(SYMCOLL_RENDER) html $< $@
.3.md.3:
	$(AM_V_GEN)$(SYMCOLL_RENDER) man $< $@
.3.md.3.html:
	$(AM_V_GEN)$(SYMCOLL_RENDER) html $< $@

# symcoll(7): its template with the configuration table written in. The filled-in
# Markdown is only a step: it is removed once rendered, since in a build in the sources
# man/ is the folder of the pages' own Markdown.
SYMCOLL_MAN7_DEPS = man/symcoll.7.md man/config-vars.awk src/core/config.c
man/symcoll.7: $(SYMCOLL_MAN7_DEPS)
	@$(MKDIR_P) man
	$(AM_V_GEN)$(AWK) -f $(srcdir)/man/config-vars.awk $(srcdir)/src/core/config.c \
		$(srcdir)/man/symcoll.7.md >man/symcoll.7.gen.md && \
	$(SYMCOLL_RENDER) man man/symcoll.7.gen.md $@ && rm -f man/symcoll.7.gen.md
man/symcoll.7.html: $(SYMCOLL_MAN7_DEPS)
	@$(MKDIR_P) man
	$(AM_V_GEN)$(AWK) -f $(srcdir)/man/config-vars.awk $(srcdir)/src/core/config.c \
		$(srcdir)/man/symcoll.7.md >man/symcoll.7.html.gen.md && \
	$(SYMCOLL_RENDER) html man/symcoll.7.html.gen.md $@ && rm -f man/symcoll.7.html.gen.md

MOSTLYCLEANFILES = man/symcoll.7.gen.md man/symcoll.7.html.gen.md

# make check: every exported call, type and status code has a page, which `make install`
# installs and groff renders without a warning
if SYMCOLL_MAN
SYMCOLL_MAN_ON = yes
else
SYMCOLL_MAN_ON = no
endif
AM_TESTS_ENVIRONMENT += mandir='$(mandir)'; docdir='$(docdir)'; \
	SYMCOLL_MAN_ON='$(SYMCOLL_MAN_ON)'; export mandir docdir SYMCOLL_MAN_ON;
TESTS += tests/test_man.sh
EXTRA_DIST += tests/test_man.sh

# In a build outside the sources, the pages rendered here are copies of what the sources
# ship or can render again; in the sources (an unpacked tarball) they are what ships.
distclean-local:
	@if test "$(srcdir)" != .; then \
	  rm -f $(SYMCOLL_MAN_RENDERED) $(SYMCOLL_MAN_HTML); \
	fi
