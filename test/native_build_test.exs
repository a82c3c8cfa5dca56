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

  # The stand-in writes the profile it was given into the library and
  # into a log, one line for each build.
  @tag timeout: 300_000
  test "a library built under another cargo profile is rebuilt, one built under the same is not" do
    dir = scratch("mcp_framer_profile")
    project = aged_copy(dir)
    log = Path.join(dir, "cargo.log")
    path = path_with_cargo(dir, ~s(echo "$profile" | tee -a "#{log}" >))
    library = Path.join(project, "priv/native/libmcp_framer_nif.so")

    compiled = fn profile ->
      {output, status} = compile(project, path, profile)
      assert status == 0, output
      {File.read!(library), File.read!(log)}
    end

    assert compiled.("checked") == {"checked\n", "checked\n"}
    assert compiled.("checked") == {"checked\n", "checked\n"}
    assert compiled.(nil) == {"release\n", "checked\nrelease\n"}
    assert compiled.("release") == {"release\n", "checked\nrelease\n"}
    # A library with no profile recorded (.ci/arm places one) is release's.
    File.rm!(Path.join(project, "priv/native/cargo_profile"))
    assert compiled.(nil) == {"release\n", "checked\nrelease\n"}
    assert compiled.("checked") == {"checked\n", "checked\nrelease\nchecked\n"}
  end

  # A VM that loaded the library maps its file: written over in place,
  # the code under it would change. A hard link keeps the old file's
  # name, so that its bytes can be read after the rebuild.
  @tag timeout: 300_000
  test "a rebuilt library replaces the file, leaving the one a running VM maps as it was" do
    dir = scratch("mcp_framer_replace")
    project = aged_copy(dir)
    path = path_with_cargo(dir, ~s(echo "$profile" >))
    library = Path.join(project, "priv/native/libmcp_framer_nif.so")
    loaded = Path.join(dir, "loaded.so")

    assert {_, 0} = compile(project, path, "checked")
    File.ln!(library, loaded)
    assert {_, 0} = compile(project, path, "release")

    assert File.read!(library) == "release\n"
    assert File.read!(loaded) == "checked\n"

    assert Path.wildcard(Path.join(project, "priv/native/*")) |> Enum.map(&Path.basename/1) ==
             ["cargo_profile", "libmcp_framer_nif.so"]
  end

  # Here cargo says it built the library and made none, so the copy fails
  # after the old library's record was let go.
  @tag timeout: 300_000
  test "a build that fails to place its library leaves the one there to be built again" do
    dir = scratch("mcp_framer_cut_short")
    project = aged_copy(dir)
    log = Path.join(dir, "cargo.log")
    builds = path_with_cargo(dir, ~s(echo "$profile" | tee -a "#{log}" >))

    places_nothing =
      path_with_cargo(Path.join(dir, "nothing"), ~s(echo "$profile" >> "#{log}"; rm -f))

    assert {_, 0} = compile(project, builds, "release")
    File.rm_rf!(Path.join(project, "target"))
    assert {_, status} = compile(project, places_nothing, "checked")
    assert status != 0
    assert {_, 0} = compile(project, builds, "release")
    assert File.read!(log) == "release\nchecked\nrelease\n"
  end

  @tag timeout: 300_000
  test "a cargo profile other than release and checked stops the build, named" do
    dir = scratch("mcp_framer_bad_profile")
    project = aged_copy(dir)
    {output, status} = compile(project, path_with_cargo(dir, "echo built >"), "dev")
    assert status != 0
    assert output =~ ~s(MCP_FRAMER_CARGO_PROFILE is "dev"; it must be release or checked)
    refute File.exists?(Path.join(project, "priv/native/libmcp_framer_nif.so"))
  end

  # make test's second run of the suite and make soak set
  # MCP_FRAMER_CARGO_PROFILE=checked; its first run does not.
  test "the NIF loaded has debug assertions exactly when built under the checked profile" do
    checked? = System.get_env("MCP_FRAMER_CARGO_PROFILE") == "checked"
    assert McpFramer.Native.debug_assertions() == checked?
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

  # A copy of the project in `dir`, every file an hour old: a source as
  # new as the library (to the second) is taken as newer.
  defp aged_copy(dir) do
    project = Path.join(dir, "project")
    copy_project(project)
    hour_ago = System.os_time(:second) - 3600

    for file <- Path.wildcard(Path.join(project, "**"), match_dot: true),
        do: File.touch!(file, hour_ago)

    project
  end

  # `mix compile` in `project`, with `path` as the PATH and
  # MCP_FRAMER_CARGO_PROFILE set to `profile` (nil leaves it unset).
  defp compile(project, path, profile) do
    env = [{"PATH", path}, {"MIX_ENV", "prod"}, {"MCP_FRAMER_CARGO_PROFILE", profile}]

    System.cmd("mix", ["compile", "--no-deps-check"],
      cd: project,
      env: env,
      stderr_to_stdout: true
    )
  end

  # The PATH with a stand-in for cargo first: it makes the library where
  # cargo would, in the directory of the profile given by --profile
  # (release for --release) in the target directory given by
  # --target-dir, else CARGO_TARGET_DIR, else ./target, with `write`, a
  # shell command given the library's path last, which may read $profile.
  defp path_with_cargo(dir, write) do
    bin = Path.join(dir, "bin")
    File.mkdir_p!(bin)

    File.write!(Path.join(bin, "cargo"), """
    #!/bin/sh
    dir=${CARGO_TARGET_DIR:-target}
    profile=debug
    while [ $# -gt 0 ]; do
      case $1 in
        --target-dir) dir=$2 ;;
        --profile) profile=$2 ;;
        --release) profile=release ;;
      esac
      shift
    done
    mkdir -p "$dir/$profile" && #{write} "$dir/$profile/#{@library}"
    """)

    File.chmod!(Path.join(bin, "cargo"), 0o755)
    bin <> ":" <> System.get_env("PATH")
  end
end
