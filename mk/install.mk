# mk/install.mk: the shared library, the man pages, the packaged files, `make install`.
#   build/libgpuos.so.1   SONAME libgpuos.so.1; exports only gpuos_* (src/client/libgpuos.map)
#   build/man/*.[158]     rendered from docs/man/*.scd with scdoc
#   build/dist/           gpuos.pc, gpuos.service with the install paths filled in
# make install PREFIX=/usr/local DESTDIR= installs the binary, both libraries, the
# header, gpuos.pc, the man pages, the systemd unit and the sample configuration,
# gpuos's libcuda.so.1 / libnvidia-ml.so.1 in LIBDIR/gpuos when built (where
# `gpuos run` looks), the Slurm scripts in DATADIR/gpuos/slurm (dist/slurm/).
PREFIX ?= /usr/local
BINDIR ?= $(PREFIX)/bin
LIBDIR ?= $(PREFIX)/lib
INCLUDEDIR ?= $(PREFIX)/include
DATADIR ?= $(PREFIX)/share
MANDIR ?= $(DATADIR)/man
SYSCONFDIR ?= $(if $(filter /usr,$(PREFIX)),/etc,$(PREFIX)/etc)
SYSTEMDUNITDIR ?= $(PREFIX)/lib/systemd/system
PKGCONFIGDIR ?= $(LIBDIR)/pkgconfig
SCDOC ?= scdoc
INSTALL ?= install
GOS_VERSION_STR := $(shell sed -n 's/^\#define GOS_VERSION "\(.*\)"/\1/p' src/common/version.h)

CLIENT_PIC := $(CLIENT_SRC:%.c=$(BUILD)/pic/%.o)
MAN_SRC := $(sort $(wildcard docs/man/*.scd))
MAN_OUT := $(MAN_SRC:docs/man/%.scd=$(BUILD)/man/%)
HAVE_SCDOC := $(shell command -v $(SCDOC) 2>/dev/null)
EXTRA_BINS += $(BUILD)/libgpuos.so.1 $(BUILD)/dist/gpuos.pc $(BUILD)/dist/gpuos.service
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

$(BUILD)/man/%: docs/man/%.scd $(BUILD)/dist/paths
	@mkdir -p $(dir $@)
	$(Q)$(SCDOC) < $< | $(SUBST) > $@.tmp && mv $@.tmp $@

SUBST = sed -e 's|@PREFIX@|$(PREFIX)|g' -e 's|@BINDIR@|$(BINDIR)|g' -e 's|@LIBDIR@|$(LIBDIR)|g' \
	-e 's|@INCLUDEDIR@|$(INCLUDEDIR)|g' -e 's|@SYSCONFDIR@|$(SYSCONFDIR)|g' -e 's|@VERSION@|$(GOS_VERSION_STR)|g'
# Regenerated when the paths change (the stamp holds them).
$(BUILD)/dist/paths: FORCE
	@mkdir -p $(dir $@)
	@echo '$(PREFIX) $(BINDIR) $(LIBDIR) $(INCLUDEDIR) $(SYSCONFDIR) $(GOS_VERSION_STR)' > $@.new
	@cmp -s $@.new $@ && rm $@.new || mv $@.new $@
$(BUILD)/dist/%: dist/%.in $(BUILD)/dist/paths
	$(Q)$(SUBST) $< > $@

SLURM_SCRIPTS := gpuos-prolog gpuos-epilog gpuos-taskprolog
SLURM_FILES := gpuos-slurm-lib.sh gpuos-slurm.conf slurm.conf.example gres.conf.example

.PHONY: install uninstall FORCE
FORCE:
install: all
	@[ -n "$(HAVE_SCDOC)" ] || { echo "gpuos: make install needs scdoc for the man pages (make deps)" >&2; exit 1; }
	$(INSTALL) -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(LIBDIR) $(DESTDIR)$(INCLUDEDIR)/gpuos \
		$(DESTDIR)$(PKGCONFIGDIR) $(DESTDIR)$(MANDIR)/man1 $(DESTDIR)$(MANDIR)/man5 $(DESTDIR)$(MANDIR)/man8 \
		$(DESTDIR)$(SYSTEMDUNITDIR) $(DESTDIR)$(SYSCONFDIR)/gpuos
	$(INSTALL) -m 755 $(BUILD)/gpuos $(DESTDIR)$(BINDIR)/gpuos
	$(INSTALL) -m 755 $(BUILD)/libgpuos.so.1 $(DESTDIR)$(LIBDIR)/libgpuos.so.1
	ln -sf libgpuos.so.1 $(DESTDIR)$(LIBDIR)/libgpuos.so
	$(INSTALL) -m 644 $(BUILD)/libgpuos.a $(DESTDIR)$(LIBDIR)/libgpuos.a
	$(INSTALL) -m 644 include/gpuos/gpuos.h $(DESTDIR)$(INCLUDEDIR)/gpuos/gpuos.h
	$(INSTALL) -m 644 include/gpuos/pmem_core.h $(DESTDIR)$(INCLUDEDIR)/gpuos/pmem_core.h
	$(INSTALL) -m 644 $(BUILD)/dist/gpuos.pc $(DESTDIR)$(PKGCONFIGDIR)/gpuos.pc
	$(INSTALL) -m 644 $(filter %.1,$(MAN_OUT)) $(DESTDIR)$(MANDIR)/man1/
	$(INSTALL) -m 644 $(filter %.5,$(MAN_OUT)) $(DESTDIR)$(MANDIR)/man5/
	$(INSTALL) -m 644 $(filter %.8,$(MAN_OUT)) $(DESTDIR)$(MANDIR)/man8/
	$(INSTALL) -m 644 $(BUILD)/dist/gpuos.service $(DESTDIR)$(SYSTEMDUNITDIR)/gpuos.service
	$(INSTALL) -m 644 dist/gpuos.conf $(DESTDIR)$(SYSCONFDIR)/gpuos/gpuos.conf.example
	$(INSTALL) -d $(DESTDIR)$(DATADIR)/gpuos/slurm
	$(INSTALL) -m 755 $(addprefix dist/slurm/,$(SLURM_SCRIPTS)) $(DESTDIR)$(DATADIR)/gpuos/slurm/
	$(INSTALL) -m 644 $(addprefix dist/slurm/,$(SLURM_FILES)) $(DESTDIR)$(DATADIR)/gpuos/slurm/
	$(INSTALL) -m 644 dist/slurm/gpuos-slurm.conf $(DESTDIR)$(SYSCONFDIR)/gpuos/slurm.conf.example
	$(if $(wildcard $(BUILD)/shim/libcuda.so.1),$(INSTALL) -d $(DESTDIR)$(LIBDIR)/gpuos && \
		$(INSTALL) -m 755 $(BUILD)/shim/libcuda.so.1 $(BUILD)/shim/libnvidia-ml.so.1 $(DESTDIR)$(LIBDIR)/gpuos/)

uninstall:
	rm -f $(DESTDIR)$(BINDIR)/gpuos $(DESTDIR)$(LIBDIR)/libgpuos.so.1 $(DESTDIR)$(LIBDIR)/libgpuos.so \
		$(DESTDIR)$(LIBDIR)/libgpuos.a $(DESTDIR)$(INCLUDEDIR)/gpuos/gpuos.h $(DESTDIR)$(INCLUDEDIR)/gpuos/pmem_core.h $(DESTDIR)$(PKGCONFIGDIR)/gpuos.pc \
		$(DESTDIR)$(SYSTEMDUNITDIR)/gpuos.service $(DESTDIR)$(SYSCONFDIR)/gpuos/gpuos.conf.example \
		$(addprefix $(DESTDIR)$(DATADIR)/gpuos/slurm/,$(SLURM_SCRIPTS) $(SLURM_FILES)) \
		$(DESTDIR)$(SYSCONFDIR)/gpuos/slurm.conf.example \
		$(DESTDIR)$(LIBDIR)/gpuos/libcuda.so.1 $(DESTDIR)$(LIBDIR)/gpuos/libnvidia-ml.so.1 \
		$(foreach m,$(MAN_OUT),$(DESTDIR)$(MANDIR)/man$(subst .,,$(suffix $(m)))/$(notdir $(m)))
-include $(CLIENT_PIC:.o=.d)
