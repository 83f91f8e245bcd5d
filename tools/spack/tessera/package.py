# Spack recipe for Tessera (docs/install.md, "Spack package"). Written from Tessera's build
# files; it has not been loaded by Spack, concretized or installed yet. `spack test run
# tessera` runs the two smoke tests at the end (the version, `check` of an installed case).
#
# Use: copy this folder (tools/spack/tessera) into the packages/ folder of a Spack package
# repository of your own (`spack repo create`, then `spack repo add`), fill in the two
# addresses marked below, then for example
#   spack install tessera@main
#   spack install tessera@main +cuda ^py-torch cuda_arch=90
#
# Needs Spack 0.23 or newer (the "c" and "cxx" language dependencies below).

# Spack recipes usually write `from spack.package import *`; the names are listed here so that
# tools/format.sh (flake8) can check this file like the other Python files.
from spack.package import depends_on, join_path, license, variant, version, which

try:  # Spack 1.0 and newer keep the build systems in the builtin package repository
    from spack_repo.builtin.build_systems.cmake import CMakePackage
    from spack_repo.builtin.build_systems.cuda import CudaPackage
except ImportError:  # older Spack exports them from spack.package
    from spack.package import CMakePackage, CudaPackage


class Tessera(CMakePackage, CudaPackage):
    """Physics-informed neural networks (PINNs) trained by domain decomposition on MPI: a C++17
    solver on LibTorch, MPI, parallel HDF5 and CGAL that reads a JSON case file and writes
    HDF5 + XDMF output."""

    # TO BE FILLED IN: both addresses below are placeholders (".invalid" never resolves).
    # Replace them with Tessera's web page and a git URL that Spack can clone before using
    # this recipe.
    homepage = "https://example.invalid/tessera"  # placeholder: to be filled in
    git = "https://example.invalid/tessera.git"  # placeholder: to be filled in

    version("main", branch="main")

    license("BSD-3-Clause")

    # CudaPackage adds the "cuda" variant (GPU training with the NCCL gradient path,
    # TESSERA_WITH_CUDA) and "cuda_arch", which py-torch must share.
    variant("tests", default=False, description="Build the doctest suites (TESSERA_BUILD_TESTS)")

    depends_on("c", type="build")
    depends_on("cxx", type="build")
    depends_on("cmake@3.18:", type="build")

    depends_on("mpi")
    depends_on("hdf5+mpi")

    # LibTorch: py-torch installs it inside its Python site-packages (torch/lib, torch/include,
    # torch/share/cmake/Torch); cmake_args passes that Torch_DIR. Spack's py-torch defaults to
    # +cuda, which then needs cuda_arch, so ~cuda is asked for explicitly.
    depends_on("py-torch")
    depends_on("py-torch~cuda", when="~cuda")
    depends_on("py-torch+cuda", when="+cuda")
    for arch in CudaPackage.cuda_arch_values:
        depends_on(f"py-torch+cuda cuda_arch={arch}", when=f"+cuda cuda_arch={arch}")
    depends_on("nccl", when="+cuda")

    # CGAL 5 or 6: src/geometry/cgal/planar_polygons.cpp reads CGAL::intersection results as
    # either's variant type (only CGAL 5.5.1 has been compiled).
    depends_on("cgal@5:")
    depends_on("gmp")
    depends_on("mpfr")
    depends_on("boost")
    depends_on("nlohmann-json@3.10:")

    # The suites assume Debian's paths (mpiexec.mpich, /usr/bin/python3 with h5py and numpy);
    # elsewhere the MPI tests are not registered and the Python-driven ones fail.
    depends_on("doctest", when="+tests")

    # Not done here: tools/make_data.sh (it needs /usr/bin/python3 with numpy, scipy and h5py),
    # so the installed share/tessera/cases/ has no data/ folder and the seven cases that read
    # data files fail until those files are made (docs/install.md, section 4).

    def torch_dir(self):
        """The folder of py-torch's TorchConfig.cmake:
        <py-torch prefix>/<Python's site-packages>/torch/share/cmake/Torch."""
        spec = self.spec
        return join_path(
            spec["py-torch"].prefix,
            spec["python"].package.platlib,
            "torch",
            "share",
            "cmake",
            "Torch",
        )

    def cmake_args(self):
        spec = self.spec
        args = [
            self.define_from_variant("TESSERA_BUILD_TESTS", "tests"),
            self.define_from_variant("TESSERA_WITH_CUDA", "cuda"),
            # Other compilers than the one Tessera is developed with may warn where it does not.
            self.define("TESSERA_WERROR", False),
            # The MPI of this build; without it CMakeLists.txt prefers an mpicc.mpich on PATH.
            self.define("MPI_C_COMPILER", spec["mpi"].mpicc),
            self.define("Torch_DIR", self.torch_dir()),
            # HDF5 through its h5pcc wrapper, not hdf5-config.cmake: FindHDF5 then gives file
            # paths instead of HDF5's target names, and the installed TesseraConfig.cmake does
            # not look for HDF5 again, so only file paths work for find_package(Tessera).
            self.define("HDF5_NO_FIND_PACKAGE_CONFIG_FILE", True),
            self.define("HDF5_C_COMPILER_EXECUTABLE", join_path(spec["hdf5"].prefix.bin, "h5pcc")),
        ]
        if spec.satisfies("+cuda"):
            arch = spec.variants["cuda_arch"].value
            if arch and arch[0] != "none":
                args.append(self.define("CMAKE_CUDA_ARCHITECTURES", ";".join(arch)))
            args += [
                self.define("CUDAToolkit_ROOT", spec["cuda"].prefix),
                self.define("NCCL_INCLUDE_DIR", spec["nccl"].prefix.include),
                self.define("NCCL_LIBRARY", spec["nccl"].libs[0]),
            ]
        return args

    def test_version(self):
        """tessera --version runs and names itself"""
        tessera = which(self.prefix.bin.tessera)
        out = tessera("--version", output=str.split, error=str.split)
        assert "tessera" in out

    def test_check_installed_case(self):
        """tessera check validates the installed Poisson case without training"""
        tessera = which(self.prefix.bin.tessera)
        case = join_path(self.prefix.share.tessera.cases, "poisson2d.json")
        tessera("check", case, output=str.split, error=str.split)
