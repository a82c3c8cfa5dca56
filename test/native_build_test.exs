defmodule McpFramer.NativeBuildTest do
  use ExUnit.Case, async: true

  # `mix compile` in a copy of the project, with a stand-in for cargo
  # (`path_with_cargo/2`).
  @root Path.expand("..", __DIR__)

  @library if match?({:unix, :darwin}, :os.type()),
             do: "libmcp_framer_nif.dylib",
             else: "libmcp_framer_nif.so"

  # Cargo names a library by its target's DLL_PREFIX and DLL_SUFFIX;
  # :erlang.load_nif/2 adds .dll on Windows and .so on every Unix to the
  # path McpFramer.Native gives it, priv/native/libmcp_framer_nif.
  test "the NIF is copied to the name the BEAM loads it by, on every OS" do
    for {os, built, loaded} <- [
          {{:unix, :linux}, "libmcp_framer_nif.so", "libmcp_framer_nif.so"},
          {{:unix, :freebsd}, "libmcp_framer_nif.so", "libmcp_framer_nif.so"},
          {{:unix, :darwin}, "libmcp_framer_nif.dylib", "libmcp_framer_nif.so"},
          {{:win32, :nt}, "mcp_framer_nif.dll", "libmcp_framer_nif.dll"}
        ] do
      assert Mix.Tasks.Compile.McpFramerNative.library_names(os) == {built, loaded}
    end

    {_built, here} = Mix.Tasks.Compile.McpFramerNative.library_names(:os.type())
    assert File.exists?(Path.join(:code.priv_dir(:mcp_framer), "native/" <> here))
  end

  @tag timeout: 300_000
  test "the NIF is taken from the target directory CARGO_TARGET_DIR names" do
    dir = scratch("mcp_framer_build")
    project = Path.join(dir, "project")
    copy_project(project)

    env = [
      {"PATH", path_with_cargo(dir, "echo built >")},
      {"CARGO_TARGET_DIR", Path.join(dir, "shared_target")},
      {"MIX_ENV", "prod"}
    ]

    {output, status} =
      System.cmd("mix", ["compile", "--no-deps-check"],
        cd: project,
        env: env,
        stderr_to_stdout: true
      )

    assert status == 0, output
    assert File.read!(Path.join(project, "priv/native/libmcp_framer_nif.so")) == "built\n"
  end

  # The README's install: a project that lists mcp_framer as a path (or
  # git) dependency, built with plain mix. Here the dependency is a copy
  # of the project and cargo a stand-in that puts this build's NIF where
  # cargo would, so that the dependent project loads a real one.
  @tag timeout: 300_000
  test "a project that depends on mcp_framer builds and loads the NIF with plain mix" do
    dir = scratch("mcp_framer_dependent")
    dependency = Path.join(dir, "mcp_framer")
    copy_project(dependency)
    {_built, loaded} = Mix.Tasks.Compile.McpFramerNative.library_names(:os.type())
    nif = Path.join(:code.priv_dir(:mcp_framer), "native/" <> loaded)
    project = Path.join(dir, "dependent")
    File.mkdir_p!(project)

    File.write!(Path.join(project, "mix.exs"), """
    defmodule Dependent.MixProject do
      use Mix.Project

      def project do
        [app: :dependent, version: "0.1.0", deps: [{:mcp_framer, path: #{inspect(dependency)}}]]
      end
    end
    """)

    script = ~S"""
    {:ok, items, framer} = McpFramer.feed(McpFramer.new(decode: :json), ~s({"id":1}\n{"id"))
    IO.inspect({items, McpFramer.buffered_bytes(framer)})
    """

    env = [{"PATH", path_with_cargo(dir, ~s(cp "#{nif}"))}, {"MIX_ENV", "prod"}]

    {output, status} =
      System.cmd("mix", ["run", "-e", script], cd: project, env: env, stderr_to_stdout: true)

    assert status == 0, output
    assert output =~ ~s({[ok: %{"id" => 1}], 5})
  end

  # A directory of the test's own, removed when it ends.
  defp scratch(name) do
    dir = Path.join(System.tmp_dir!(), "#{name}_#{System.unique_integer([:positive])}")
    on_exit(fn -> File.rm_rf!(dir) end)
    dir
  end

  # The project's files that `mix compile` builds from, copied to `to`.
  defp copy_project(to) do
    File.mkdir_p!(to)

    for file <- ~w(mix.exs lib native Cargo.toml Cargo.lock .formatter.exs) do
      File.cp_r!(Path.join(@root, file), Path.join(to, file))
    end
  end

  # The PATH with a stand-in for cargo first: it makes the library where
  # cargo would, in the target directory given by --target-dir, else
  # CARGO_TARGET_DIR, else ./target, with `write`, a shell command given
  # the library's path last.
  defp path_with_cargo(dir, write) do
    bin = Path.join(dir, "bin")
    File.mkdir_p!(bin)

    File.write!(Path.join(bin, "cargo"), """
    #!/bin/sh
    dir=${CARGO_TARGET_DIR:-target}
    while [ $# -gt 0 ]; do
      if [ "$1" = --target-dir ]; then dir=$2; fi
      shift
    done
    mkdir -p "$dir/release" && #{write} "$dir/release/#{@library}"
    """)

    File.chmod!(Path.join(bin, "cargo"), 0o755)
    bin <> ":" <> System.get_env("PATH")
  end
end
