//! How a client is told what fixes a refusal. The host knows the
//! [`Remedy`]; the embedder that serves it may know the command line that
//! carries it out (its own CLI's, with its folders): given one, the client
//! reads that command, else the host's neutral words.

use std::sync::Arc;

use crate::remedy::Remedy;

/// The command line that carries out a remedy where the host is served,
/// or `None` for a remedy the embedder has no command for (the host's own
/// words are used then): what `McpServer::with_remedy_command` takes.
pub(super) type RemedyCommand = Arc<dyn Fn(&Remedy) -> Option<String> + Send + Sync>;

/// The server's way of putting remedies into words.
#[derive(Clone, Default)]
pub(super) struct Remedies(Option<RemedyCommand>);

impl Remedies {
    pub(super) fn new(command: RemedyCommand) -> Remedies {
        Remedies(Some(command))
    }

    fn command(&self, remedy: &Remedy) -> Option<String> {
        self.0.as_ref().and_then(|c| c(remedy))
    }

    /// For a tool's description, after its approval state: `run COMMAND`.
    pub(super) fn in_description(&self, remedy: &Remedy) -> String {
        match self.command(remedy) {
            Some(command) => format!("run {command}"),
            None => remedy.to_string(),
        }
    }

    /// After an error's message: who can approve and how, or what to run.
    pub(super) fn after_error(&self, remedy: &Remedy) -> String {
        match (remedy, self.command(remedy)) {
            (Remedy::Approve { .. }, Some(command)) => {
                format!("the user can approve it by running: {command}")
            }
            (_, Some(command)) => format!("run: {command}"),
            (Remedy::Approve { .. }, None) => format!("the user can {remedy}"),
            (_, None) => remedy.to_string(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn approve() -> Remedy {
        Remedy::Approve {
            plugin: "kv".to_owned(),
        }
    }

    #[test]
    fn without_the_embedder_s_command_the_client_reads_words_that_name_none() {
        let words = Remedies::default();
        assert_eq!(
            words.after_error(&approve()),
            "the user can approve plugin \"kv\" with the host's approval tool"
        );
        assert_eq!(
            words.in_description(&approve()),
            "approve plugin \"kv\" with the host's approval tool"
        );
    }

    #[test]
    fn the_embedder_s_command_is_what_the_client_is_told_to_run() {
        let command = Remedies::new(Arc::new(|r: &Remedy| match r {
            Remedy::Approve { plugin } => Some(format!("tool approve {plugin}")),
            _ => None,
        }));
        assert_eq!(
            command.after_error(&approve()),
            "the user can approve it by running: tool approve kv"
        );
        assert_eq!(command.in_description(&approve()), "run tool approve kv");
        let validate = Remedy::Validate {
            plugin: "kv".to_owned(),
        };
        assert_eq!(command.after_error(&validate), validate.to_string());
    }
}
