# The container image, built and run (tools/image_check.sh; the README's "The container
# image"): deploy/Dockerfile built with Debian's buildah on a debootstrap base, run with
# podman on SQLite and on PostgreSQL. Needs root and the packages below; the base and the
# image are cached outside the checkout, the build skipped while its inputs are unchanged.
# `make test` runs it beside the suite when run as root (CI does).
IMAGE_PACKAGES := podman buildah debootstrap runc uidmap slirp4netns \
	containernetworking-plugins iptables openssl postgresql

.PHONY: image
image:
	@missing=$$(for p in $(IMAGE_PACKAGES); do \
		dpkg-query -W -f='$${Status}\n' $$p 2>/dev/null | grep -q 'ok installed' || echo $$p; \
	done); \
	if [ -n "$$missing" ]; then \
		if [ "$$(id -u)" = 0 ]; then \
			apt-get update -qq && \
			DEBIAN_FRONTEND=noninteractive apt-get install -y -q $$missing >/dev/null; \
		else echo "make image needs root and: apt-get install $$missing" >&2; exit 1; fi; \
	fi
	bash tools/image_check.sh
