# Thin wrapper over CMake for the everyday commands (see README.md).
BUILD ?= build
JOBS ?= $(shell nproc)

default: all

deps:
	tools/install-deps.sh

.PHONY: deps all test asan tsan format format-check deps-check clean demo

all:
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo $(CMAKE_ARGS) >/dev/null
	cmake --build $(BUILD) -j $(JOBS)

test: all
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS)
	@tools/count_results.sh $(BUILD)

asan:
	$(MAKE) test BUILD=build-asan CMAKE_ARGS="-DOC_SANITIZE=ON -DOC_CUDA=OFF"

tsan:
	$(MAKE) test BUILD=build-tsan CMAKE_ARGS="-DOC_TSAN=ON -DOC_CUDA=OFF"

demo: all
	./$(BUILD)/offcore demo

format:
	clang-format -i $$(git ls-files '*.c' '*.h')

format-check:
	clang-format --dry-run --Werror $$(git ls-files '*.c' '*.h')

deps-check:
	tools/check_deps.sh

clean:
	rm -rf build build-*
