# bash completion for smartio's programs: options from each program's own
# --help (the one source of them), subcommands of smartio, fabric names from
# `smartio list`. Installed under each program's name.

_smartio_words_from_help()
{
	"$@" --help 2>/dev/null | grep -oE -- '--[a-z][a-z0-9-]*' | sort -u
}

_smartio_fabrics()
{
	smartio list --json 2>/dev/null | grep -oE '"fabric":"[^"]*"' | cut -d'"' -f4
}

_smartio_complete()
{
	local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD-1]}
	local prog=${COMP_WORDS[0]} words

	if [[ $prev == --fabric ]]; then
		COMPREPLY=($(compgen -W "$(_smartio_fabrics)" -- "$cur"))
		return
	fi
	if [[ $(basename -- "$prog") == smartio ]]; then
		if ((COMP_CWORD == 1)); then
			words=$("$prog" --help 2>/dev/null | sed -n 's/^  \([a-z][a-z]*\) .*/\1/p' | sort -u)
			COMPREPLY=($(compgen -W "$words --help --version" -- "$cur"))
			return
		fi
		if [[ $cur != -* ]]; then	# a fabric's name after the subcommand
			COMPREPLY=($(compgen -W "$(_smartio_fabrics)" -- "$cur"))
			return
		fi
		words=$(_smartio_words_from_help "$prog" "${COMP_WORDS[1]}")
	else
		words=$(_smartio_words_from_help "$prog")
	fi
	COMPREPLY=($(compgen -W "$words" -- "$cur"))
}

complete -F _smartio_complete smartio nvme-emu nvme-manager nvme-client nvme-identify \
	nvme-mcast-identify edu-emu edu-dma smartio-ivshmem-server smartio-nvme
