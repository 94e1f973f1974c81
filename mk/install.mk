# SPDX-License-Identifier: Apache-2.0
# mk/install.mk: the shared library, the man pages, the packaged files, `make install`.
#   build/libgpuos.so.1   SONAME libgpuos.so.1; exports only gpuos_* (src/client/libgpuos.map)
#   build/man/*.[158]     rendered from docs/man/*.scd with scdoc
#   build/libgpuos-pmem.a the partition-local memory host API (gpuos/pmem.h)
#   build/dist/           gpuos.pc, gpuos-pmem.pc, gpuos.service, the sample configurations and
#                         the Slurm scripts' library with the install paths filled in
# make install PREFIX=/usr/local DESTDIR= installs the binary, the libraries, the
# public headers, the .pc files, gpuos run's libcuda.so.1 and libnvidia-ml.so.1
# (LIBDIR/gpuos), the man pages, the systemd unit, its sysusers.d file (the
# daemon's user and group gpuos, the tenants' group gpuos-users), the udev rule
# giving the GPU's device nodes to group gpuos, and the sample configuration; into
# the live system (no DESTDIR) it runs ldconfig and systemd-sysusers.
# The Slurm scripts go to DATADIR/gpuos/slurm (dist/slurm/).
PREFIX ?= /usr/local
BINDIR ?= $(PREFIX)/bin
LIBDIR ?= $(PREFIX)/lib
INCLUDEDIR ?= $(PREFIX)/include
DATADIR ?= $(PREFIX)/share
MANDIR ?= $(DATADIR)/man
SYSCONFDIR ?= $(if $(filter /usr,$(PREFIX)),/etc,$(PREFIX)/etc)
SYSTEMDUNITDIR ?= $(PREFIX)/lib/systemd/system
UDEVRULESDIR ?= $(PREFIX)/lib/udev/rules.d
PKGCONFIGDIR ?= $(LIBDIR)/pkgconfig
SCDOC ?= scdoc
INSTALL ?= install
GOS_VERSION_STR := $(shell sed -n 's/^\#define GOS_VERSION "\(.*\)"/\1/p' src/common/version.h)

SLURM_SCRIPTS := gpuos-prolog gpuos-epilog gpuos-taskprolog
SLURM_FILES := gpuos-slurm-lib.sh gpuos-slurm.conf slurm.conf.example gres.conf.example
# dist/ files installed with the paths filled in (@SYSCONFDIR@ ...), from build/dist/
DIST_SUBST := gpuos.conf $(SLURM_FILES:%=slurm/%)
CLIENT_PIC := $(CLIENT_SRC:%.c=$(BUILD)/pic/%.o)
MAN_SRC := $(sort $(wildcard docs/man/*.scd))
MAN_OUT := $(MAN_SRC:docs/man/%.scd=$(BUILD)/man/%)
HAVE_SCDOC := $(shell command -v $(SCDOC) 2>/dev/null)
EXTRA_BINS += $(BUILD)/libgpuos.so.1 $(BUILD)/libgpuos-pmem.a $(BUILD)/dist/gpuos.pc $(BUILD)/dist/gpuos-pmem.pc \
	$(BUILD)/dist/gpuos.service $(DIST_SUBST:%=$(BUILD)/dist/%)
# The public headers: every function they declare is in an installed library
# (gpuos.h: libgpuos; pmem.h: libgpuos-pmem; pmem_core.h, pmem_dev.cuh: inline).
PUBLIC_HEADERS := include/gpuos/gpuos.h include/gpuos/pmem.h include/gpuos/pmem_core.h include/gpuos/pmem_dev.cuh
# The partition-local memory host API (pmem.h) works on the GPU directly, so it
# needs the device layer and the chart reader: libgpuos-pmem.a is the core's
# objects it reaches (and jansson's), linked into one object whose only global
# symbols are pmem.h's functions, as libgpuos.a is made (static only: the core is not PIC).
PAREN := (
PMEM_API := $(shell sed -n 's/^[a-z][a-z0-9_ ]*[ *]\(gos_pmem_[a-z0-9_]*\)[$(PAREN)].*/\1/p' include/gpuos/pmem.h)
# ldconfig after an install into the live system (no DESTDIR, as root); the system
# user of the unit from its sysusers.d file (SYSUSERS= skips it, e.g. in tests).
LDCONFIG ?= ldconfig
SYSUSERS ?= systemd-sysusers
SYSUSERSDIR ?= $(PREFIX)/lib/sysusers.d
ifneq ($(HAVE_SCDOC),)
EXTRA_BINS += $(MAN_OUT)
else
$(info gpuos: no scdoc: man pages not rendered (make deps installs it; make install needs it))
endif

$(BUILD)/pic/%.o: %.c
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  CC    $< (PIC)")
	$(Q)$(CC) $(CFLAGS) -fPIC -c -o $@ $<

$(BUILD)/libgpuos.so.1: $(CLIENT_PIC) src/client/libgpuos.map
	@$(if $(Q),echo "  LINK  $@")
	$(Q)$(CC) $(CFLAGS) -shared -Wl,-soname,libgpuos.so.1 -Wl,--version-script=src/client/libgpuos.map \
		-Wl,--no-undefined -o $@ $(CLIENT_PIC) -lpthread

$(BUILD)/libgpuos-pmem.a: $(BUILD)/libgpuos_core.a include/gpuos/pmem.h
	@$(if $(Q),echo "  AR    $@")
	$(Q)$(CC) -r -nostdlib -o $(BUILD)/libgpuos-pmem.o $(PMEM_API:%=-Wl,-u,%) $(BUILD)/libgpuos_core.a \
		-Wl,-Bstatic -ljansson -Wl,-Bdynamic && \
		objcopy $(PMEM_API:%=--keep-global-symbol=%) $(BUILD)/libgpuos-pmem.o && \
		rm -f $@ && ar rcs $@ $(BUILD)/libgpuos-pmem.o

$(BUILD)/man/%: docs/man/%.scd $(BUILD)/dist/paths
	@mkdir -p $(dir $@)
	$(Q)$(SCDOC) < $< | $(SUBST) > $@.tmp && mv $@.tmp $@

SUBST = sed -e 's|@PREFIX@|$(PREFIX)|g' -e 's|@BINDIR@|$(BINDIR)|g' -e 's|@LIBDIR@|$(LIBDIR)|g' \
	-e 's|@INCLUDEDIR@|$(INCLUDEDIR)|g' -e 's|@SYSCONFDIR@|$(SYSCONFDIR)|g' -e 's|@VERSION@|$(GOS_VERSION_STR)|g' \
	-e 's|@DATADIR@|$(DATADIR)|g'
# Regenerated when the paths change (the stamp holds them).
$(BUILD)/dist/paths: FORCE
	@mkdir -p $(dir $@)
	@echo '$(PREFIX) $(BINDIR) $(LIBDIR) $(INCLUDEDIR) $(SYSCONFDIR) $(DATADIR) $(GOS_VERSION_STR)' > $@.new
	@cmp -s $@.new $@ && rm $@.new || mv $@.new $@
$(BUILD)/dist/%: dist/%.in $(BUILD)/dist/paths
	$(Q)$(SUBST) $< > $@
$(DIST_SUBST:%=$(BUILD)/dist/%): $(BUILD)/dist/%: dist/% $(BUILD)/dist/paths
	@mkdir -p $(dir $@)
	$(Q)$(SUBST) $< > $@

# One configuration directory, SYSCONFDIR, for every component: compiled into the
# binary (gpuos serve's default --config), filled into the unit, the sample
# configurations, the Slurm scripts and the man pages. The installed binary is
# build/dist/gpuos, main.c compiled again with the install's SYSCONFDIR, so that
# `make install PREFIX=...` never relinks build/gpuos under running tests
# (build/gpuos keeps the SYSCONFDIR of the make that first built it).
$(BUILD)/src/cli/main.o: CFLAGS += -DGOS_SYSCONFDIR='"$(SYSCONFDIR)"'
$(BUILD)/dist/main.o: src/cli/main.c $(BUILD)/dist/paths
	@mkdir -p $(dir $@)
	$(Q)$(CC) $(CFLAGS) -DGOS_SYSCONFDIR='"$(SYSCONFDIR)"' -c -o $@ $<
$(BUILD)/dist/gpuos: $(BUILD)/dist/main.o $(BUILD)/libgpuos_core.a
	@$(if $(Q),echo "  LINK  $@")
	$(Q)$(CC) $(CFLAGS) -o $@ $< $(CORE_LINK) $(LDLIBS)
-include $(BUILD)/dist/main.d


.PHONY: install uninstall FORCE
FORCE:
SHIM_INSTALLED := $(if $(SHIM),libcuda.so.1 libnvidia-ml.so.1)
install: all $(BUILD)/dist/gpuos
	@[ -n "$(HAVE_SCDOC)" ] || { echo "gpuos: make install needs scdoc for the man pages (make deps)" >&2; exit 1; }
	$(INSTALL) -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(LIBDIR) $(DESTDIR)$(INCLUDEDIR)/gpuos \
		$(DESTDIR)$(PKGCONFIGDIR) $(DESTDIR)$(MANDIR)/man1 $(DESTDIR)$(MANDIR)/man5 $(DESTDIR)$(MANDIR)/man8 \
		$(DESTDIR)$(SYSTEMDUNITDIR) $(DESTDIR)$(SYSCONFDIR)/gpuos $(DESTDIR)$(SYSUSERSDIR) $(DESTDIR)$(UDEVRULESDIR)
	$(INSTALL) -m 755 $(BUILD)/dist/gpuos $(DESTDIR)$(BINDIR)/gpuos
	$(INSTALL) -m 755 $(BUILD)/libgpuos.so.1 $(DESTDIR)$(LIBDIR)/libgpuos.so.1
	ln -sf libgpuos.so.1 $(DESTDIR)$(LIBDIR)/libgpuos.so
	$(INSTALL) -m 644 $(BUILD)/libgpuos.a $(BUILD)/libgpuos-pmem.a $(DESTDIR)$(LIBDIR)/
	$(INSTALL) -m 644 $(PUBLIC_HEADERS) $(DESTDIR)$(INCLUDEDIR)/gpuos/
	$(INSTALL) -m 644 $(BUILD)/dist/gpuos.pc $(BUILD)/dist/gpuos-pmem.pc $(DESTDIR)$(PKGCONFIGDIR)/
	$(INSTALL) -m 644 $(filter %.1,$(MAN_OUT)) $(DESTDIR)$(MANDIR)/man1/
	$(INSTALL) -m 644 $(filter %.5,$(MAN_OUT)) $(DESTDIR)$(MANDIR)/man5/
	$(INSTALL) -m 644 $(filter %.8,$(MAN_OUT)) $(DESTDIR)$(MANDIR)/man8/
	$(INSTALL) -m 644 $(BUILD)/dist/gpuos.service $(DESTDIR)$(SYSTEMDUNITDIR)/gpuos.service
	$(INSTALL) -m 644 dist/gpuos.sysusers $(DESTDIR)$(SYSUSERSDIR)/gpuos.conf
	$(INSTALL) -m 644 dist/70-gpuos-nvidia.rules $(DESTDIR)$(UDEVRULESDIR)/70-gpuos-nvidia.rules
	$(INSTALL) -m 644 $(BUILD)/dist/gpuos.conf $(DESTDIR)$(SYSCONFDIR)/gpuos/gpuos.conf.example
	$(INSTALL) -d $(DESTDIR)$(DATADIR)/gpuos/slurm
	$(INSTALL) -m 755 $(addprefix dist/slurm/,$(SLURM_SCRIPTS)) $(DESTDIR)$(DATADIR)/gpuos/slurm/
	$(INSTALL) -m 644 $(addprefix $(BUILD)/dist/slurm/,$(SLURM_FILES)) $(DESTDIR)$(DATADIR)/gpuos/slurm/
	$(INSTALL) -m 644 $(BUILD)/dist/slurm/gpuos-slurm.conf $(DESTDIR)$(SYSCONFDIR)/gpuos/slurm.conf.example
ifneq ($(SHIM),)
	$(INSTALL) -d $(DESTDIR)$(LIBDIR)/gpuos
	$(INSTALL) -m 755 $(SHIM_INSTALLED:%=$(SHIM)/%) $(DESTDIR)$(LIBDIR)/gpuos/
else
	@echo "gpuos: built without cuda.h: gpuos run's libcuda.so.1 is not installed" >&2
endif
	@if [ -z "$(DESTDIR)" ] && [ "$$(id -u)" = 0 ]; then \
		if [ -n "$(LDCONFIG)" ] && command -v $(LDCONFIG) >/dev/null 2>&1; then $(LDCONFIG) || exit 1; fi; \
		if [ -n "$(SYSUSERS)" ] && command -v $(SYSUSERS) >/dev/null 2>&1; then \
			$(SYSUSERS) $(SYSUSERSDIR)/gpuos.conf || exit 1; fi; \
	fi

uninstall:
	rm -f $(DESTDIR)$(BINDIR)/gpuos $(DESTDIR)$(LIBDIR)/libgpuos.so.1 $(DESTDIR)$(LIBDIR)/libgpuos.so \
		$(DESTDIR)$(LIBDIR)/libgpuos.a $(DESTDIR)$(LIBDIR)/libgpuos-pmem.a \
		$(PUBLIC_HEADERS:include/gpuos/%=$(DESTDIR)$(INCLUDEDIR)/gpuos/%) \
		$(DESTDIR)$(PKGCONFIGDIR)/gpuos.pc $(DESTDIR)$(PKGCONFIGDIR)/gpuos-pmem.pc \
		$(DESTDIR)$(SYSTEMDUNITDIR)/gpuos.service $(DESTDIR)$(SYSCONFDIR)/gpuos/gpuos.conf.example \
		$(DESTDIR)$(UDEVRULESDIR)/70-gpuos-nvidia.rules \
		$(addprefix $(DESTDIR)$(DATADIR)/gpuos/slurm/,$(SLURM_SCRIPTS) $(SLURM_FILES)) \
		$(DESTDIR)$(SYSCONFDIR)/gpuos/slurm.conf.example \
		$(DESTDIR)$(SYSUSERSDIR)/gpuos.conf $(DESTDIR)$(LIBDIR)/gpuos/libcuda.so.1 \
		$(DESTDIR)$(LIBDIR)/gpuos/libnvidia-ml.so.1 \
		$(foreach m,$(MAN_OUT),$(DESTDIR)$(MANDIR)/man$(subst .,,$(suffix $(m)))/$(notdir $(m)))
	-rmdir $(DESTDIR)$(LIBDIR)/gpuos $(DESTDIR)$(INCLUDEDIR)/gpuos 2>/dev/null

-include $(CLIENT_PIC:.o=.d)
